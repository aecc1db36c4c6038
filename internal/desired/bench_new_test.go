package desired

import (
	"fmt"
	"net/netip"
	"testing"
)

// BenchmarkComputeNewService is a new Service's two passes as the
// controller runs them at 10,000 Services with 5 endpoints each, memoised
// (issue 29): object, the pass after the Service object came, without
// endpoints yet; slice, the pass after its EndpointSlice came. Each
// iteration adds one more Service (the world grows by b.N), and times
// only the pass its name gives.
//
//	go test -run '^$' -bench ComputeNewService -benchmem ./internal/desired/
func BenchmarkComputeNewService(b *testing.B) {
	const n = 10000
	eps := func(i int) []ep {
		var out []ep
		for j := range 5 {
			out = append(out, ep{ip: fmt.Sprintf("192.168.%d.%d", i%250, j), node: fmt.Sprint("n", (i+j)%20), ready: true, serving: true})
		}
		return out
	}
	opts := defaults()
	opts.TrackNodes, opts.SharedListener = true, true
	opts.Binds = []netip.Addr{netip.MustParseAddr("10.255.0.1")}
	for _, pass := range []string{"object", "slice"} {
		b.Run(pass, func(b *testing.B) {
			in := bigInput(n, eps)
			in.Memo = &Memo{}
			Compute(in, opts)
			for i := n; b.Loop(); i++ {
				name := fmt.Sprint("svc", i)
				s := svc("default", name, i, local)
				s.Spec.Ports[0].Port = int32(20000 + i%40000)
				if pass == "slice" {
					b.StopTimer()
				}
				in.Services = append(in.Services, s)
				r := Compute(in, opts)
				if len(r.Config.Frontends) != i+1 {
					b.Fatal(len(r.Config.Frontends), i+1)
				}
				if pass == "object" {
					b.StopTimer()
				} else {
					b.StartTimer()
				}
				in.Slices = append(in.Slices, slice("default", name, 8080, eps(i)...))
				if r := Compute(in, opts); len(r.Config.Backends) != i+1 {
					b.Fatal(len(r.Config.Backends), i+1)
				}
				if pass == "object" {
					b.StartTimer()
				}
			}
		})
	}
}
