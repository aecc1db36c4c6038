package spares

import (
	"fmt"
	"net/netip"
	"runtime"
	"slices"
	"strings"
	"testing"

	"github.com/haproxy-k8s-sync/haproxy-k8s-sync/internal/model"
	"github.com/haproxy-k8s-sync/haproxy-k8s-sync/internal/plan"
	"github.com/haproxy-k8s-sync/haproxy-k8s-sync/internal/testing/liveheap"
)

// BenchmarkDriverKept reports the heap the local driver's state of a
// whole Services-mode pass keeps at 10,000 Services with 5 servers each
// (issue 29's peak): the pool's view (ViewMemo, with the backends it
// made) and the slot layout plan.Assign gives that view, the model
// itself held before and after (kept-B/op: live bytes after a
// collection; the model is not counted).
//
//	go test ./internal/spares -run '^$' -bench DriverKept -benchtime 3x
func BenchmarkDriverKept(b *testing.B) {
	const n = 10000
	cfg := keptModel(n)
	pol := Policy{Spares: 200, Other: 1, LowWater: 1}
	var kept int64
	for b.Loop() {
		var s State
		var memo ViewMemo
		var view model.Config
		var layout model.Layout
		var exhausted []string
		kept += liveheap.Growth(func() {
			var waiting []string
			s, waiting = Occupy(State{}, cfg)
			s, _ = Grow(s, cfg, waiting, pol)
			s, _ = Occupy(s, cfg)
			view, _ = memo.ViewExcept(s, cfg, nil, nil)
			layout, exhausted = plan.Assign(view, nil, true)
		})
		if len(exhausted) > 0 || len(layout) < n {
			b.Fatal(len(exhausted), len(layout))
		}
		runtime.KeepAlive(s)
		runtime.KeepAlive(&memo)
		runtime.KeepAlive(view)
		runtime.KeepAlive(layout)
	}
	runtime.KeepAlive(cfg)
	b.ReportMetric(float64(kept)/float64(b.N), "kept-B/op")
}

// keptModel is n Services' backends of one class, 5 servers each, sorted
// by name as a model's are.
func keptModel(n int) model.Config {
	var cfg model.Config
	for i := range n {
		servers := make([]model.Server, 5)
		for j := range servers {
			servers[j] = model.Server{Addr: netip.AddrFrom4([4]byte{192, 168, byte(i % 250), byte(j)}), Port: 8080}
		}
		cfg.Backends = append(cfg.Backends, &model.Backend{Name: fmt.Sprintf("be_ns%d_svc%05d_80", i%50, i),
			Service: fmt.Sprintf("ns%d/svc%05d", i%50, i), Balance: "roundrobin", Servers: servers})
	}
	slices.SortFunc(cfg.Backends, func(a, b *model.Backend) int { return strings.Compare(a.Name, b.Name) })
	return cfg
}

// BenchmarkEncodeMemoKept reports what pool.json's encoding memo keeps
// with the output it returned (which the driver keeps as the bytes last
// written) at 20,000 spares (issue 29's peak: 10,000 Services and their
// pool): after a first encode (/first) and after a second one with one
// spare changed (/one-changed) (kept-B/op: live bytes after a
// collection; the pool itself not counted).
//
//	go test ./internal/spares -run '^$' -bench EncodeMemoKept -benchtime 3x
func BenchmarkEncodeMemoKept(b *testing.B) {
	const n = 20000
	s := State{Classes: []model.Backend{{Balance: "roundrobin"}}}
	for i := range n {
		s.Spares = append(s.Spares, Spare{Name: SpareName(i), Occupant: fmt.Sprintf("be_default_svc-%05d_%d", i, 20000+i), Slots: 8})
	}
	changed := s.Clone()
	changed.Spares[n/2].Occupant = ""
	for _, bc := range []struct {
		name  string
		pools []State
	}{{"first", []State{s}}, {"one-changed", []State{s, changed}}} {
		b.Run(bc.name, func(b *testing.B) {
			var kept int64
			for b.Loop() {
				var m EncodeMemo
				var out []byte
				kept += liveheap.Growth(func() {
					for _, p := range bc.pools {
						var err error
						if out, err = m.Encode(p); err != nil {
							b.Fatal(err)
						}
					}
				})
				runtime.KeepAlive(&m)
				runtime.KeepAlive(out)
			}
			b.ReportMetric(float64(kept)/float64(b.N), "kept-B/op")
		})
	}
}
