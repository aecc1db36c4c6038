package spares

import (
	"net/netip"
	"slices"
	"testing"

	"github.com/haproxy-k8s-sync/haproxy-k8s-sync/internal/model"
)

// TestSourceMarks: a backend is marked SourceChecked when a listened,
// restricted frontend names it, and a servers-only pass is marked in the
// size of its change, its Changes kept against the last marked slice.
func TestSourceMarks(t *testing.T) {
	listened := func(f model.Frontend) bool { return len(f.Binds) > 0 }
	fe := func(name string, ranges ...string) model.Frontend {
		f := model.Frontend{Name: "fe_" + name, Backend: "be_" + name,
			Binds: []model.Bind{{Addr: netip.MustParseAddr("192.0.2.10"), Port: 80}}}
		for _, r := range ranges {
			f.SourceRanges = append(f.SourceRanges, netip.MustParsePrefix(r))
		}
		return f
	}
	everyAddr := fe("c", "198.51.100.0/24")
	everyAddr.Binds = nil
	for _, tc := range []struct {
		name string
		fs   []model.Frontend
		want []bool // SourceChecked of be_a, be_b, be_c
	}{
		{"none restricted", []model.Frontend{fe("a"), fe("b"), fe("c")}, []bool{false, false, false}},
		{"one restricted", []model.Frontend{fe("a"), fe("b", "198.51.100.0/24"), fe("c")}, []bool{false, true, false}},
		{"restricted but not listened", []model.Frontend{fe("a"), fe("b"), everyAddr}, []bool{false, false, false}},
	} {
		var m SourceMarks
		cfg := cfgOf(be("be_a", 0, "10.0.0.1:1"), be("be_b", 0, "10.0.0.2:1"), be("be_c", 0, "10.0.0.3:1"))
		cfg.Frontends = tc.fs
		out := m.Of(cfg, listened)
		for i, b := range out.Backends {
			if b.SourceChecked != tc.want[i] {
				t.Errorf("%s: %s SourceChecked %v, want %v", tc.name, b.Name, b.SourceChecked, tc.want[i])
			}
			if cfg.Backends[i].SourceChecked {
				t.Errorf("%s: the model's own %s was changed", tc.name, b.Name)
			}
		}
		// A pass changing be_b's servers only.
		next := cfg
		next.Backends = append([]*model.Backend(nil), cfg.Backends...)
		next.Backends[1] = cfg.Backends[1].WithServers([]model.Server{{Addr: netip.MustParseAddr("10.0.0.9"), Port: 1}})
		next.Changes = &model.Changes{Base: cfg.Backends, Backends: []int{1}}
		got := m.Of(next, listened)
		if got.Changes == nil || !model.SameSlice(got.Changes.Base, out.Backends) || len(got.Changes.Backends) != 1 {
			t.Fatalf("%s: a servers-only pass lost its Changes: %+v", tc.name, got.Changes)
		}
		if b := got.Backends[1]; b.SourceChecked != tc.want[1] || b.Servers[0].Addr != netip.MustParseAddr("10.0.0.9") {
			t.Errorf("%s: be_b after the change: %+v", tc.name, b)
		}
		if got.Backends[0] != out.Backends[0] || got.Backends[2] != out.Backends[2] {
			t.Errorf("%s: backends that did not change are not the ones of the last pass", tc.name)
		}
		// A whole pass (a new Service behind the listener) with the same
		// backend objects: each is the very one of the last pass, a
		// marked copy included (the view's memo keeps its spare).
		whole := model.Config{Frontends: append(slices.Clone(tc.fs), fe("d")), Backends: next.Backends}
		again := m.Of(whole, listened)
		for i, b := range again.Backends {
			if b != got.Backends[i] {
				t.Errorf("%s: %s made again by a whole pass", tc.name, b.Name)
			}
		}
	}
}

// TestSourceTwin: with SourceTwin the pool keeps free spares of the
// default class's twin, and a restored pool keeps them (no reload after
// a restart of the controller).
func TestSourceTwin(t *testing.T) {
	pol := Policy{Spares: 2, Other: 1, LowWater: 1, SourceTwin: true}
	cfg := cfgOf(be("be_a", 0, "10.0.0.1:1"))
	occ, waiting := Occupy(State{}, cfg)
	s, grew := Grow(occ, cfg, waiting, pol)
	if !grew || len(s.Classes) != 2 || !s.Classes[1].SourceChecked || s.Classes[0].SourceChecked {
		t.Fatalf("classes %+v, want the default and its twin", s.Classes)
	}
	if free := s.Free(); free[0] != 2 || free[1] != 1 {
		t.Errorf("free spares %v, want [2 1]", free)
	}
	if r := Restore(s, cfg); len(r.Classes) != 2 || len(r.Spares) != len(s.Spares) {
		t.Errorf("restored %+v, want both classes and every spare", r)
	}
	if _, again := Grow(s, cfg, nil, pol); again {
		t.Errorf("the pool grows again")
	}
}
