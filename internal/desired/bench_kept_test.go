package desired

import (
	"fmt"
	"runtime"
	"testing"

	discoveryv1 "k8s.io/api/discovery/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/haproxy-k8s-sync/haproxy-k8s-sync/internal/testing/liveheap"
)

// BenchmarkComputeKept reports the heap a whole pass's Result keeps
// (kept-B/op: live bytes after a collection, the Result held) at 10,000
// Local Services with 5 endpoints each, the first pass of issue 29's
// Services-mode peak: what the controller holds until the next pass.
// memo: the controller's way, with the Memo it keeps beside the Result
// (the two held each backend twice before the memo kept the Result's
// own object); then a second whole pass, nothing changed, and what both
// keep after it.
//
//	go test -run '^$' -bench ComputeKept -benchtime 3x ./internal/desired/
func BenchmarkComputeKept(b *testing.B) {
	const n = 10000
	in := fiveOnTwenty(n)
	for _, c := range []struct {
		name   string
		passes int // with a memo; 0: none
	}{{"whole", 0}, {"memo", 1}, {"memo-second", 2}} {
		b.Run(c.name, func(b *testing.B) {
			var kept int64
			for b.Loop() {
				in := in
				var memo *Memo
				if c.passes > 0 {
					memo = new(Memo)
					in.Memo = memo
				}
				var r Result
				kept += liveheap.Growth(func() {
					r = Compute(in, defaults())
					for range c.passes - 1 {
						r = Compute(in, defaults())
					}
				})
				if len(r.Config.Backends) != n {
					b.Fatal(len(r.Config.Backends))
				}
				runtime.KeepAlive(r)
				runtime.KeepAlive(memo)
			}
			b.ReportMetric(float64(kept)/float64(b.N), "kept-B/op")
		})
	}
}

// BenchmarkSliceCacheKept reports the heap the informer's cache of
// EndpointSlices keeps as Slices (source.Slim) at 10,000 slices of 5
// endpoints on 20 nodes, the EndpointSlices themselves not counted.
//
//	go test -run '^$' -bench SliceCacheKept -benchtime 3x ./internal/desired/
func BenchmarkSliceCacheKept(b *testing.B) {
	const n = 10000
	in := make([]*discoveryv1.EndpointSlice, n)
	for i := range in {
		var eps []ep
		for j := range 5 {
			eps = append(eps, ep{ip: fmt.Sprintf("192.168.%d.%d", i%250, j), node: fmt.Sprint("n", (i+j)%20), ready: true, serving: true})
		}
		in[i] = endpointSlice("default", fmt.Sprint("svc", i), 8080, eps...)
		in[i].UID = types.UID(fmt.Sprintf("00000000-0000-0000-0000-%012d", i))
		in[i].ResourceVersion = fmt.Sprint(100000 + i)
	}
	var kept int64
	for b.Loop() {
		var out []*Slice
		kept += liveheap.Growth(func() {
			out = make([]*Slice, n)
			for i, s := range in {
				out[i] = SliceOf(s)
			}
		})
		runtime.KeepAlive(out)
	}
	runtime.KeepAlive(in)
	b.ReportMetric(float64(kept)/float64(b.N), "kept-B/op")
}
