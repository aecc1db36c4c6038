package spares

import (
	"reflect"
	"runtime"
	"testing"
	"time"

	"github.com/haproxy-k8s-sync/haproxy-k8s-sync/internal/model"
	"github.com/haproxy-k8s-sync/haproxy-k8s-sync/internal/testing/liveheap"
)

// TestViewMemo: each step's view through the memo is ViewExcept's, and
// only the spares made of other objects than the last view's are built
// again: a new occupant, a backend changed (a new object), a spare
// emptied, resized or of a class that changed, a spare new to the pool.
func TestViewMemo(t *testing.T) {
	a, b, c, b2 := viewBackends() // b2: b's servers changed, another object
	class := viewClass()
	other := class
	other.TimeoutServer = time.Second
	pool := func(occupants ...string) State { return classPool(class, occupants...) }
	sized := pool("a", "b", "")
	sized.Spares[2].Slots = 8
	otherClass := pool("a", "b", "")
	otherClass.Classes[0] = other
	steps := []struct {
		name  string
		s     State
		cfg   model.Config
		built int
	}{
		{"first", pool("a", "b", ""), cfgOf(a, b), 3},
		{"the same objects", pool("a", "b", ""), cfgOf(a, b), 0},
		{"a new Service in the free spare", pool("a", "b", "c"), cfgOf(a, b, c), 1},
		{"b's servers changed", pool("a", "b", "c"), cfgOf(a, b2, c), 1},
		{"c gone", pool("a", "b", ""), cfgOf(a, b2), 1},
		{"the pool grew", pool("a", "b", "", ""), cfgOf(a, b2), 1},
		{"a spare resized", sized, cfgOf(a, b2), 1},
		{"the class changed", otherClass, cfgOf(a, b2), 3},
		{"the class back", pool("a", "b", ""), cfgOf(a, b2), 3},
	}
	var m ViewMemo
	var last model.Config
	for _, st := range steps {
		before := m.built
		got, _ := m.ViewExcept(st.s, st.cfg, nil, nil) // its frontends' changes: TestViewDeltaRandomEdits
		if want := ViewExcept(st.s, st.cfg, nil); !reflect.DeepEqual(got, want) {
			t.Fatalf("%s: the memo's view\n%+v\nwant\n%+v", st.name, got, want)
		}
		if n := m.built - before; n != st.built {
			t.Errorf("%s: %d spares built, want %d", st.name, n, st.built)
		}
		// A reused backend is the very one of the last view.
		for _, nb := range got.Backends {
			for _, ob := range last.Backends {
				if nb.Name == ob.Name && nb != ob && reflect.DeepEqual(nb, ob) && st.built == 0 {
					t.Errorf("%s: %s copied, not reused", st.name, nb.Name)
				}
			}
		}
		last = got
	}
	if len(m.last.spares) != 3 || len(m.last.from) != 3 {
		t.Errorf("the memo keeps %d spares (%d occupants), want the last view's 3", len(m.last.spares), len(m.last.from))
	}
}

// viewClass is a class of the views' tests: be's settings, no servers.
func viewClass() model.Backend {
	class := *be("", 0)
	class.Name, class.Service, class.Servers = "", "", nil
	return class
}

// classPool is a pool of one class, spare i occupied by occupants[i]
// ("": free).
func classPool(class model.Backend, occupants ...string) State {
	s := State{Classes: []model.Backend{class}}
	for i, o := range occupants {
		s.Spares = append(s.Spares, Spare{Name: SpareName(i), Occupant: o})
	}
	return s
}

// viewBackends are the views' tests' backends a, b, c and b2, b with
// other servers (another object).
func viewBackends() (a, b, c, b2 *model.Backend) {
	return be("a", 0, "10.0.0.1:80"), be("b", 0, "10.0.0.2:80"), be("c", 0, "10.0.0.3:80"), be("b", 0, "10.0.0.4:80")
}

// TestViewLater: a view made by ViewLater is ViewExcept's (always whole,
// never by difference), reuses the backends of the memo's last view, and
// the view after it (whole or by difference) builds and reuses exactly
// what it would after ViewExcept.
func TestViewLater(t *testing.T) {
	a, b, c, b2 := viewBackends() // b2: b's servers changed, another object
	pool := func(occupants ...string) State { return classPool(viewClass(), occupants...) }
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
			if lazy.last.spares != nil || lazy.last.occ != nil {
				t.Errorf("%s: the memo's maps built now", st.name)
			}
		} else {
			got, _ = lazy.ViewExcept(st.s, st.cfg, nil, nil)
		}
		want, _ := eager.ViewExcept(st.s, st.cfg, nil, nil) // its frontends' changes: TestViewDeltaRandomEdits
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
	w := &world{s: pool("a", "b", "", "", ""), cfg: cfgOf(a, b2, c)} // c: not in the view
	if got, want := memoIndex(&lazy, w), memoIndex(&eager, w); !reflect.DeepEqual(got, want) || len(got) != 2 {
		t.Errorf("the index after a later view %v, want %v", got, want)
	}
}

// TestViewLaterKeepsNoMaps: at 10,000 Services in 20,000 spares (issue
// 29's peak: the pool's growth is the first pass's), what the memo keeps
// after ViewLater beside the view is the spares' copy, not its maps
// (the delta's index and occupants: ~1.5 MB kept by ViewExcept), and
// ViewExcept's keeps no map of every spare's name.
func TestViewLaterKeepsNoMaps(t *testing.T) {
	const n = 10000
	cfg := keptModel(n)
	s, waiting := Occupy(State{}, cfg)
	s, _ = Grow(s, cfg, waiting, Policy{Spares: 200, Other: 1, LowWater: 1})
	s, _ = Occupy(s, cfg)
	spares := len(s.Spares)
	var view model.Config
	viewed := liveheap.Growth(func() { view = ViewExcept(s, cfg, nil) }) // the view alone
	runtime.KeepAlive(view)
	view = model.Config{}
	kept := map[string]int64{}
	for _, later := range []bool{false, true} {
		var m *ViewMemo
		k := liveheap.Growth(func() {
			m = &ViewMemo{}
			if later {
				view = m.ViewLater(s, cfg, nil)
			} else {
				view, _ = m.ViewExcept(s, cfg, nil, nil)
			}
		})
		kept[map[bool]string{false: "ViewExcept", true: "ViewLater"}[later]] = k
		runtime.KeepAlive(m)
		runtime.KeepAlive(view)
		view = model.Config{}
	}
	t.Logf("%d spares: the view alone %d bytes; with the memo: ViewExcept %d, ViewLater %d", spares, viewed, kept["ViewExcept"], kept["ViewLater"])
	// The spares' copy (48 bytes each) and a few bytes each more.
	if limit := viewed + int64(spares)*(48+16); kept["ViewLater"] > limit {
		t.Errorf("ViewLater's view with its memo keeps %d bytes, want at most %d (the view %d and the spares' copy)",
			kept["ViewLater"], limit, viewed)
	}
	// ViewExcept's: the spares' copy, their places and occupants (64
	// bytes each) and the delta's map of occupants; no map of every
	// spare's name, none of every backend's (main before hwm29b: 245
	// bytes a spare; without the first 151, without the second 107).
	if limit := viewed + int64(spares)*128; kept["ViewExcept"] > limit {
		t.Errorf("ViewExcept's view with its memo keeps %d bytes, want at most %d (the view %d, 128 a spare)",
			kept["ViewExcept"], limit, viewed)
	}
	runtime.KeepAlive(cfg)
}

// TestViewKeepsHTTPSHeld: a view, whole, by difference from the memo's
// last one or later, keeps the model's held HTTPS names and the claims
// made of them (model.Config.HTTPSClaimed): HAProxy's driver
// renders the view, the kernel's sets read the model, and both must
// choose the same frontends for the fixed HTTPS listener.
func TestViewKeepsHTTPSHeld(t *testing.T) {
	a, b, _, b2 := viewBackends()
	s := classPool(viewClass(), "a", "b", "")
	held := []model.HeldName{{SNI: "a.example.com", Front: "gw_a"}}
	claimed := &model.Claimed{Names: map[string]bool{"gw_a": true}}
	with := func(cfg model.Config) model.Config { cfg.HTTPSHeld, cfg.HTTPSClaimed = held, claimed; return cfg }
	var m ViewMemo
	for _, step := range []struct {
		name string
		view func() model.Config
	}{
		{"View", func() model.Config { return View(s, with(cfgOf(a, b))) }},
		{"the memo's first", func() model.Config { v, _ := m.ViewExcept(s, with(cfgOf(a, b)), nil, nil); return v }},
		{"the memo's next", func() model.Config { v, _ := m.ViewExcept(s, with(cfgOf(a, b2)), nil, nil); return v }},
		{"later", func() model.Config { return m.ViewLater(s, with(cfgOf(a, b)), nil) }},
	} {
		v := step.view()
		if !reflect.DeepEqual(v.HTTPSHeld, held) {
			t.Errorf("%s: HTTPSHeld %v, want %v", step.name, v.HTTPSHeld, held)
		}
		if v.HTTPSClaimed != claimed {
			t.Errorf("%s: the claims carried %v, want the model's", step.name, v.HTTPSClaimed)
		}
	}
}
