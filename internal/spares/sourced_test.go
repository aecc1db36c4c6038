package spares

import (
	"fmt"
	"math/rand/v2"
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
		out := m.Of(cfg, nil, listened)
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
		got := m.Of(next, nil, listened)
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
		again := m.Of(whole, nil, listened)
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

// TestSourceMarksRandomEdits: pass after pass of random edits to the
// frontends (added, removed, restricted or not, another backend, not
// listened), the marks kept from the last pass, half the passes saying
// which frontends changed (model.FrontendChanges, as desired's delta
// does), are those of a whole count.
func TestSourceMarksRandomEdits(t *testing.T) {
	listened := func(f model.Frontend) bool { return len(f.Binds) > 0 }
	vip := netip.MustParseAddr("192.0.2.10")
	for _, seed := range []uint64{1, 2, 3, 4} {
		t.Run(fmt.Sprint("seed ", seed), func(t *testing.T) {
			r := rand.New(rand.NewPCG(seed, 29))
			var backends []*model.Backend
			for i := range 8 {
				backends = append(backends, be(fmt.Sprintf("be_%d", i), 0, fmt.Sprintf("10.0.0.%d:1", i+1)))
			}
			front := func(name string) model.Frontend {
				f := model.Frontend{Name: name, Backend: backends[r.IntN(len(backends))].Name}
				if r.IntN(4) > 0 {
					f.Binds = []model.Bind{{Addr: vip, Port: uint16(1 + r.IntN(1000))}}
				}
				if r.IntN(2) == 0 {
					f.SourceRanges = []netip.Prefix{netip.MustParsePrefix("198.51.100.0/24")}
				}
				return f
			}
			var m SourceMarks
			var fs []model.Frontend
			said, marked := 0, 0
			for pass := range 400 {
				prev := fs
				fs = slices.Clone(fs)
				for range 1 + r.IntN(2) {
					switch k := r.IntN(3); {
					case k == 0 || len(fs) < 3:
						name := fmt.Sprintf("fe_%03d", r.IntN(300))
						if i, found := model.FrontendIndex(fs, name); !found {
							fs = slices.Insert(fs, i, front(name))
						}
					case k == 1:
						i := r.IntN(len(fs))
						fs = slices.Delete(fs, i, i+1)
					default:
						i := r.IntN(len(fs))
						fs[i] = front(fs[i].Name)
					}
				}
				cfg := model.Config{Frontends: fs, Backends: backends}
				var fronts *model.FrontendChanges
				if r.IntN(2) == 0 {
					fronts = &model.FrontendChanges{Base: prev, Of: fs, Names: model.ChangedFrontends(prev, fs)}
					said++
				}
				got := m.Of(cfg, fronts, listened)
				var whole SourceMarks
				want := whole.Of(model.Config{Frontends: fs, Backends: backends}, nil, listened)
				if model.SameSlice(want.Backends, backends) != model.SameSlice(got.Backends, backends) {
					t.Fatalf("pass %d: the model's own backends kept %v, by a whole count %v", pass,
						model.SameSlice(got.Backends, backends), model.SameSlice(want.Backends, backends))
				}
				for i := range want.Backends {
					if want.Backends[i].SourceChecked {
						marked++
					}
					if got.Backends[i].SourceChecked != want.Backends[i].SourceChecked {
						t.Fatalf("pass %d: %s SourceChecked %v, a whole count %v", pass, want.Backends[i].Name,
							got.Backends[i].SourceChecked, want.Backends[i].SourceChecked)
					}
				}
			}
			if said == 0 || marked == 0 {
				t.Fatalf("%d passes said their frontends' changes, %d backends marked", said, marked)
			}
		})
	}
}
