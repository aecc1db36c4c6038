package spares

import (
	"fmt"
	"net/netip"
	"slices"
	"testing"

	"github.com/haproxy-k8s-sync/haproxy-k8s-sync/internal/model"
)

// BenchmarkPlaceNewBackend: the pool's placing of a pass at 10,000
// Services (issue 29): OccupyFit and Grow with one new backend among
// the others, each placed already, the driver's work before its view.
//
//	go test ./internal/spares -run '^$' -bench PlaceNewBackend -benchtime 100x
func BenchmarkPlaceNewBackend(b *testing.B) {
	pol := Policy{Spares: 200, Other: 1, LowWater: 1}
	cfg, s := manyPlaced(10000, pol)
	cfg.Backends = append(cfg.Backends, &model.Backend{Name: "be_new", Service: "ns/new", Balance: "roundrobin"})
	for b.Loop() {
		next, waiting := OccupyFit(s, cfg, nil)
		if _, grow := Grow(next, cfg, waiting, pol); grow || len(waiting) > 0 {
			b.Fatalf("grow %v, waiting %v: want the new backend in a free spare", grow, waiting)
		}
	}
}

// BenchmarkOccupyFitPass: the driver's OccupyFit of a pass at 10,000
// Services, a new backend coming and going pass after pass, the slots
// of each spare asked of a map as the driver's spareSlots does: the
// whole walk (occupyFit) beside the memo's from what changed
// (occupymemo.go).
//
//	go test ./internal/spares -run '^$' -bench OccupyFitPass -benchtime 200x
func BenchmarkOccupyFitPass(b *testing.B) {
	without, s0 := manyPlaced(10000, Policy{Spares: 200, Other: 1, LowWater: 1})
	var waiting []string
	layout := map[string]int{}
	for _, sp := range s0.Spares {
		layout[sp.Name] = 4
	}
	slots := func(name string) int { return layout[name] }
	with := model.Config{Backends: append(slices.Clone(without.Backends), &model.Backend{Name: "be_new", Service: "ns/new", Balance: "roundrobin"})}
	for _, memo := range []bool{false, true} {
		b.Run(map[bool]string{false: "whole", true: "memo"}[memo], func(b *testing.B) {
			var m ClassMemo
			s, cfgs, k := s0, []model.Config{with, without}, 0
			for b.Loop() {
				if memo {
					s, waiting = m.OccupyFit(s, cfgs[k%2], slots)
				} else {
					s, waiting = OccupyFit(s, cfgs[k%2], slots)
				}
				if len(waiting) > 0 {
					b.Fatalf("waiting %v", waiting)
				}
				k++
			}
		})
	}
}

// manyPlaced is n backends of one class, each in a spare, and the pool
// grown as pol wants.
func manyPlaced(n int, pol Policy) (model.Config, State) {
	var cfg model.Config
	for i := range n {
		cfg.Backends = append(cfg.Backends, &model.Backend{Name: fmt.Sprintf("be_%05d", i), Service: fmt.Sprintf("ns/s%05d", i), Balance: "roundrobin"})
	}
	s, waiting := Occupy(State{}, cfg)
	s, _ = Grow(s, cfg, waiting, pol)
	return cfg, s
}

// BenchmarkEndpointPass: the pool's bookkeeping of an endpoint pass at
// 10,000 Services in tproxy mode's churn (issue 29): one backend's
// servers change (a new object of the same class, in the same spare),
// as an EndpointSlice's update makes them, through the driver's steps
// around its view (ClassMemo.OccupyFit, Grow, EncodeMemo.Encode of
// pool.json). What it allocates is what the collector must catch up
// with pass after pass: B/op is the number to read.
//
//	go test ./internal/spares -run '^$' -bench EndpointPass -benchmem -benchtime 200x
func BenchmarkEndpointPass(b *testing.B) {
	pol := Policy{Spares: 200, Other: 1, LowWater: 1}
	cfg, s0 := manyPlaced(10000, pol)
	slots := func(string) int { return 8 }
	var m ClassMemo
	var enc EncodeMemo
	s, _ := m.OccupyFit(s0, cfg, slots)
	if _, err := enc.Encode(s); err != nil {
		b.Fatal(err)
	}
	server := func(k int) []model.Server {
		return []model.Server{{Addr: netip.AddrFrom4([4]byte{10, 0, byte(k >> 8), byte(k)}), Port: 80}}
	}
	k := 0
	b.ReportAllocs()
	for b.Loop() {
		k++
		c := cfg
		c.Backends = slices.Clone(cfg.Backends) // the desired pass's array (not timed apart: the driver does not make it)
		i := k % len(c.Backends)
		nb := *c.Backends[i]
		nb.Servers = server(k)
		c.Backends[i] = &nb
		next, waiting := m.OccupyFit(s, c, slots)
		if _, grow := m.Grow(next, c, waiting, pol); grow || len(waiting) > 0 {
			b.Fatalf("grow %v, waiting %v: an endpoint pass changes no spare", grow, waiting)
		}
		if _, err := enc.Encode(next); err != nil {
			b.Fatal(err)
		}
		s, cfg = next, c
	}
}
