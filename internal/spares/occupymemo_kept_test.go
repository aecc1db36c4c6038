package spares

import (
	"runtime"
	"slices"
	"strings"
	"testing"

	"github.com/haproxy-k8s-sync/haproxy-k8s-sync/internal/model"
	"github.com/haproxy-k8s-sync/haproxy-k8s-sync/internal/testing/liveheap"
)

// occupyKeptWorld is a pool of 10,000 Services' backends (keptModel) in
// 10,200 spares and the model of the next pass: one new Service's
// backend among them (issue 29's first delta passes).
func occupyKeptWorld(n int) (State, model.Config, model.Config) {
	cfg := keptModel(n)
	s, waiting := Occupy(State{}, cfg)
	s, _ = Grow(s, cfg, waiting, Policy{Spares: 200, Other: 1, LowWater: 1})
	s, _ = Occupy(s, cfg)
	next := cfg
	nb := &model.Backend{Name: "be_ns0_svc04999x_80", Service: "ns0/svc04999x", Balance: "roundrobin", Servers: cfg.Backends[0].Servers}
	at, _ := slices.BinarySearchFunc(cfg.Backends, nb.Name, func(b *model.Backend, n string) int { return strings.Compare(b.Name, n) })
	next.Backends = slices.Insert(slices.Clone(cfg.Backends), at, nb)
	return s, cfg, next
}

// BenchmarkOccupyMemoKept reports what the placing memo (ClassMemo's
// OccupyFit) keeps at 10,000 Services after a pass that places them all
// and the next one's new Service (kept-B/op: live bytes after a
// collection, the models held before and after, the pool it was given
// dropped for the one it returned, as the driver does).
//
//	go test ./internal/spares -run '^$' -bench OccupyMemoKept -benchtime 5x
func BenchmarkOccupyMemoKept(b *testing.B) {
	const n = 10000
	s0, cfg, next := occupyKeptWorld(n)
	slots := func(string) int { return 8 }
	var kept int64
	for b.Loop() {
		var m ClassMemo
		var waiting []string
		s := s0.Clone()
		kept += liveheap.Growth(func() { s, waiting = occupyTwice(&m, s, cfg, next, slots) })
		if len(waiting) > 0 || m.occ.reused != 1 {
			b.Fatal(waiting, m.occ.reused)
		}
		runtime.KeepAlive(&m)
		runtime.KeepAlive(s)
	}
	runtime.KeepAlive(cfg)
	runtime.KeepAlive(next)
	b.ReportMetric(float64(kept)/float64(b.N), "kept-B/op")
}

// TestOccupyMemoKeepsNoMapOfOccupants: at 10,000 Services, the placing
// memo keeps a few bytes a backend after the pass that places them all
// and the next one's new Service (their classes and the places of their
// spares), not a map of every occupant (main kept ~52 B a backend: 0.52
// MB), and the new Service takes the spare the whole walk gives it. The
// bound counts 16 B a backend for the placing memo and 8 more for the
// classes' second array ClassMemo.of keeps to write in place (ep29c).
func TestOccupyMemoKeepsNoMapOfOccupants(t *testing.T) {
	const n = 10000
	s, cfg, next := occupyKeptWorld(n)
	slots := func(string) int { return 8 }
	want, _ := OccupyFit(s, next, slots)
	var m ClassMemo
	var waiting []string
	kept := liveheap.Growth(func() { s, waiting = occupyTwice(&m, s, cfg, next, slots) })
	t.Logf("kept %d B for %d backends", kept, n)
	if m.occ.reused != 1 || len(waiting) > 0 {
		t.Fatalf("the new Service's pass: %d from what changed, waiting %v", m.occ.reused, waiting)
	}
	if !slices.Equal(s.Spares, want.Spares) {
		t.Error("the memo placed the new Service elsewhere than the whole walk")
	}
	if kept > 24*n {
		t.Errorf("the placing memo kept %d B for %d backends, want at most %d", kept, n, 24*n)
	}
	runtime.KeepAlive(&m)
	runtime.KeepAlive(cfg)
	runtime.KeepAlive(next)
}

// occupyTwice is the memo's pass that places cfg's backends in s, then
// the next one's (next).
func occupyTwice(m *ClassMemo, s State, cfg, next model.Config, slots func(string) int) (State, []string) {
	s, _ = m.OccupyFit(s, cfg, slots)
	return m.OccupyFit(s, next, slots)
}
