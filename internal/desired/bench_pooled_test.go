package desired

import (
	"fmt"
	"net/netip"
	"testing"
)

// BenchmarkComputePooled: a pass with a Memo after one EndpointSlice
// changed, at 2,000 Services, each on its own address (Pooled) against all
// on one (the single-address run of the same size); and a pass after a new
// Service got an address (the allocation changed).
func BenchmarkComputePooled(b *testing.B) {
	const n = 2000
	for _, pooled := range []bool{false, true} {
		in := bigInput(n, func(i int) []ep {
			return []ep{{ip: "192.168.0.1", node: fmt.Sprint("n", i%20), ready: true, serving: true}}
		})
		o := defaults()
		o.Pooled = pooled
		if pooled {
			in.Addresses = make(map[string][]netip.Addr, n)
			for i := range n {
				in.Addresses[fmt.Sprint("default/svc", i)] = []netip.Addr{netip.AddrFrom4([4]byte{198, 18, byte(i >> 8), byte(i)})}
			}
		}
		var memo Memo
		in.Memo = &memo
		Compute(in, o)
		name := map[bool]string{false: "one-address", true: "own-address"}[pooled]
		b.Run(name+"/endpoint-change", func(b *testing.B) {
			for i := 0; b.Loop(); i++ {
				in.Slices[i%n] = slice("default", fmt.Sprint("svc", i%n), 8080, ep{ip: "192.168.0.2", node: fmt.Sprint("n", i%20), ready: i%2 == 0, serving: true})
				if r := Compute(in, o); len(r.Config.Frontends) != n {
					b.Fatal(len(r.Config.Frontends))
				}
			}
		})
		if pooled {
			b.Run(name+"/allocation-change", func(b *testing.B) {
				for i := 0; b.Loop(); i++ {
					next := make(map[string][]netip.Addr, n)
					for k, v := range in.Addresses {
						next[k] = v
					}
					next[fmt.Sprint("default/svc", i%n)] = []netip.Addr{netip.AddrFrom4([4]byte{198, 19, byte(i >> 8), byte(i)})}
					in.Addresses = next
					Compute(in, o)
				}
			})
		}
	}
}
