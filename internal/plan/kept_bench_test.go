package plan

import (
	"fmt"
	"net/netip"
	"runtime"
	"slices"
	"testing"

	"github.com/haproxy-k8s-sync/haproxy-k8s-sync/internal/model"
	"github.com/haproxy-k8s-sync/haproxy-k8s-sync/internal/testing/liveheap"
)

// BenchmarkAssignDeltaKept reports what a delta pass's slot layout
// costs at 10,000 backends of 5 servers (issue 29's peak: the driver's
// pass for a new Service, one spare's backend another object): the live
// heap after AssignDelta with the driver's last layout dropped, as the
// driver drops it (kept-B/op: live bytes after a collection against
// before the pass, the models held; a layout that replaces its base
// one for one keeps ~0), and the bytes the pass allocated (B/op: the
// copy alive beside the base while the pass runs).
//
//	go test ./internal/plan -run '^$' -bench AssignDeltaKept -benchtime 5x -benchmem
func BenchmarkAssignDeltaKept(b *testing.B) {
	const n = 10000
	prevCfg := keptConfig(n)
	cfg := prevCfg
	cfg.Backends = slices.Clone(prevCfg.Backends)
	cfg.Backends[n/2] = cfg.Backends[n/2].WithServers(keptServers(7, 3))
	var kept int64
	for b.Loop() {
		b.StopTimer()
		prev, _ := Assign(prevCfg, nil, true)
		var next model.Layout
		var exhausted []string
		var delta *model.LayoutDelta
		kept += liveheap.Growth(func() { // measured with the timer stopped
			b.StartTimer()
			next, exhausted, delta = AssignDelta(cfg, prevCfg, prev, false)
			b.StopTimer()
			prev, delta = nil, nil // the driver's d.layout = next
		})
		if len(exhausted) > 0 || len(next) != n {
			b.Fatal(len(exhausted), len(next))
		}
		runtime.KeepAlive(next)
		runtime.KeepAlive(prev)
		runtime.KeepAlive(delta)
		b.StartTimer()
	}
	runtime.KeepAlive(cfg)
	b.ReportMetric(float64(int64(kept))/float64(b.N), "kept-B/op")
}

// keptConfig is n backends of 5 servers, sorted by name.
func keptConfig(n int) model.Config {
	var cfg model.Config
	for i := range n {
		cfg.Backends = append(cfg.Backends, &model.Backend{Name: fmt.Sprintf("_pool_%05d", i), Servers: keptServers(i, 5)})
	}
	return cfg
}

func keptServers(i, n int) []model.Server {
	out := make([]model.Server, n)
	for j := range out {
		out[j] = model.Server{Addr: netip.AddrFrom4([4]byte{10, byte(i >> 8), byte(i), byte(j)}), Port: 8080}
	}
	return out
}
