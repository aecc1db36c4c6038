package spares

import (
	"fmt"
	"testing"

	"github.com/haproxy-k8s-sync/haproxy-k8s-sync/internal/model"
)

// BenchmarkPlaceNewBackend: the pool's placing of a pass at 10,000
// Services (issue 29): OccupyFit and Grow with one new backend among
// the others, each placed already, the driver's work before its view.
//
//	go test ./internal/spares -run '^$' -bench PlaceNewBackend -benchtime 100x
func BenchmarkPlaceNewBackend(b *testing.B) {
	const n = 10000
	pol := Policy{Spares: 200, Other: 1, LowWater: 1}
	var cfg model.Config
	for i := range n {
		cfg.Backends = append(cfg.Backends, &model.Backend{Name: fmt.Sprintf("be_%05d", i), Service: fmt.Sprintf("ns/s%05d", i), Balance: "roundrobin"})
	}
	s, waiting := Occupy(State{}, cfg)
	s, _ = Grow(s, cfg, waiting, pol)
	cfg.Backends = append(cfg.Backends, &model.Backend{Name: "be_new", Service: "ns/new", Balance: "roundrobin"})
	for b.Loop() {
		next, waiting := OccupyFit(s, cfg, nil)
		if _, grow := Grow(next, cfg, waiting, pol); grow || len(waiting) > 0 {
			b.Fatalf("grow %v, waiting %v: want the new backend in a free spare", grow, waiting)
		}
	}
}
