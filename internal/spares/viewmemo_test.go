package spares

import (
	"reflect"
	"testing"
	"time"

	"github.com/haproxy-k8s-sync/haproxy-k8s-sync/internal/model"
)

// TestViewMemo: each step's view through the memo is ViewExcept's, and
// only the spares made of other objects than the last view's are built
// again: a new occupant, a backend changed (a new object), a spare
// emptied, resized or of a class that changed, a spare new to the pool.
func TestViewMemo(t *testing.T) {
	a, b, c := be("a", 0, "10.0.0.1:80"), be("b", 0, "10.0.0.2:80"), be("c", 0, "10.0.0.3:80")
	b2 := be("b", 0, "10.0.0.4:80") // b's servers changed: another object
	class := *be("", 0)
	class.Name, class.Service, class.Servers = "", "", nil
	other := class
	other.TimeoutServer = time.Second
	pool := func(occupants ...string) State {
		s := State{Classes: []model.Backend{class}}
		for i, o := range occupants {
			s.Spares = append(s.Spares, Spare{Name: SpareName(i), Occupant: o})
		}
		return s
	}
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
		got := m.ViewExcept(st.s, st.cfg, nil)
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
	if len(m.spares) != 3 {
		t.Errorf("the memo keeps %d spares, want the last view's 3", len(m.spares))
	}
}
