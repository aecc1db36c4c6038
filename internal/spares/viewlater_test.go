package spares

import (
	"reflect"
	"runtime"
	"testing"

	"github.com/haproxy-k8s-sync/haproxy-k8s-sync/internal/model"
)

// TestViewLater: a view made by ViewLater is ViewExcept's (always whole,
// never by difference), reuses the backends of the memo's last view, and
// the view after it (whole or by difference) builds and reuses exactly
// what it would after ViewExcept.
func TestViewLater(t *testing.T) {
	a, b, c := be("a", 0, "10.0.0.1:80"), be("b", 0, "10.0.0.2:80"), be("c", 0, "10.0.0.3:80")
	b2 := be("b", 0, "10.0.0.4:80")
	class := *be("", 0)
	class.Name, class.Service, class.Servers = "", "", nil
	pool := func(occupants ...string) State {
		s := State{Classes: []model.Backend{class}}
		for i, o := range occupants {
			s.Spares = append(s.Spares, Spare{Name: SpareName(i), Occupant: o})
		}
		return s
	}
	steps := []struct {
		name  string
		s     State
		cfg   model.Config
		later bool
	}{
		{"first, later", pool("a", "b", ""), cfgOf(a, b), true},
		{"the same objects", pool("a", "b", ""), cfgOf(a, b), false},
		{"the pool grew, later", pool("a", "b", "", ""), cfgOf(a, b), true},
		{"a new Service in a free spare (a delta)", pool("a", "b", "c", ""), cfgOf(a, b, c), false},
		{"b's servers changed, later", pool("a", "b", "c", ""), cfgOf(a, b2, c), true},
		{"twice later", pool("a", "b", "c", "", ""), cfgOf(a, b2, c), true},
		{"c gone (a delta)", pool("a", "b", "", "", ""), cfgOf(a, b2), false},
		{"the Index", pool("a", "b", "", "", ""), cfgOf(a, b2), true},
	}
	var lazy, eager ViewMemo
	var last model.Config
	for _, st := range steps {
		lb, eb, ld, ed := lazy.built, eager.built, lazy.deltas, eager.deltas
		var got model.Config
		if st.later {
			got = lazy.ViewLater(st.s, st.cfg, nil)
			if lazy.spares != nil || lazy.last.index != nil {
				t.Errorf("%s: the memo's maps built now", st.name)
			}
		} else {
			got = lazy.ViewExcept(st.s, st.cfg, nil)
		}
		want := eager.ViewExcept(st.s, st.cfg, nil)
		if !reflect.DeepEqual(got, want) || !reflect.DeepEqual(got, ViewExcept(st.s, st.cfg, nil)) {
			t.Fatalf("%s: the view\n%+v\nwant\n%+v", st.name, got, want)
		}
		wantDeltas := eager.deltas - ed
		if st.later {
			wantDeltas = 0
		}
		if lazy.built-lb != eager.built-eb || lazy.deltas-ld != wantDeltas {
			t.Errorf("%s: %d spares built and %d deltas, want %d and %d", st.name,
				lazy.built-lb, lazy.deltas-ld, eager.built-eb, wantDeltas)
		}
		for _, nb := range got.Backends { // reused: the very backend of the last view
			for _, ob := range last.Backends {
				if nb.Name == ob.Name && nb != ob && reflect.DeepEqual(nb, ob) {
					t.Errorf("%s: %s copied, not reused", st.name, nb.Name)
				}
			}
		}
		last = got
	}
	if got, want := lazy.Index(), eager.Index(); !reflect.DeepEqual(got, want) {
		t.Errorf("the index after a later view %v, want %v", got, want)
	}
}

// TestViewLaterKeepsNoMaps: at 10,000 Services in 20,000 spares (issue
// 29's peak: the pool's growth is the first pass's), what the memo keeps
// after ViewLater beside the view is the spares' copy, not its maps
// (every spare's entry, the delta's index and occupants: ~2-3 MB kept by
// ViewExcept).
func TestViewLaterKeepsNoMaps(t *testing.T) {
	const n = 10000
	cfg := keptModel(n)
	s, waiting := Occupy(State{}, cfg)
	s, _ = Grow(s, cfg, waiting, Policy{Spares: 200, Other: 1, LowWater: 1})
	s, _ = Occupy(s, cfg)
	spares := len(s.Spares)
	var view model.Config
	viewed := heapGrowth(func() { view = ViewExcept(s, cfg, nil) }) // the view alone
	runtime.KeepAlive(view)
	view = model.Config{}
	kept := map[string]uint64{}
	for _, later := range []bool{false, true} {
		var m *ViewMemo
		k := heapGrowth(func() {
			m = &ViewMemo{}
			if later {
				view = m.ViewLater(s, cfg, nil)
			} else {
				view = m.ViewExcept(s, cfg, nil)
			}
		})
		kept[map[bool]string{false: "ViewExcept", true: "ViewLater"}[later]] = k
		runtime.KeepAlive(m)
		runtime.KeepAlive(view)
		view = model.Config{}
	}
	t.Logf("%d spares: the view alone %d bytes; with the memo: ViewExcept %d, ViewLater %d", spares, viewed, kept["ViewExcept"], kept["ViewLater"])
	// The spares' copy (48 bytes each) and a few bytes each more.
	if limit := viewed + uint64(spares)*(48+16); kept["ViewLater"] > limit {
		t.Errorf("ViewLater's view with its memo keeps %d bytes, want at most %d (the view %d and the spares' copy)",
			kept["ViewLater"], limit, viewed)
	}
	runtime.KeepAlive(cfg)
}
