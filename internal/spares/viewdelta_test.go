package spares

import (
	"fmt"
	"math/rand/v2"
	"net/netip"
	"reflect"
	"slices"
	"strings"
	"testing"

	"github.com/haproxy-k8s-sync/haproxy-k8s-sync/internal/model"
)

// TestViewDeltaRandomEdits: step after step of random edits to a model
// and its pool (a Service added into a free spare or left waiting, one
// removed, its servers changed, moved to another spare, its frontend's
// binds changed, the pool grown, a routed frontend added or removed),
// the memo's view, made from the last one where it can, is ViewExcept's
// whole view, and its Index is the view's, model backend to position.
// Unchanged objects stay the same between steps, as a model that shares
// what did not change keeps them. Half the steps say which frontends
// changed (model.FrontendChanges), as desired's delta pass does.
func TestViewDeltaRandomEdits(t *testing.T) {
	for _, seed := range []uint64{1, 2, 3, 4, 5} {
		t.Run(fmt.Sprint("seed ", seed), func(t *testing.T) {
			r := rand.New(rand.NewPCG(seed, 29))
			w := newWorld(r)
			var m ViewMemo
			var lastOut []model.Frontend // the view's last Frontends
			said := 0                    // views that said their frontends' changes
			for step := range 400 {
				prev := w.cfg.Frontends
				was := w.s.Spares // edits clone the pool before they change it
				wasBackend := map[string]*model.Backend{}
				for _, b := range w.cfg.Backends {
					wasBackend[b.Name] = b
				}
				w.edit(r, step)
				if r.IntN(3) == 0 { // two edits in one step: a routed frontend beside a spare's change
					first := w.last
					w.edit(r, step)
					w.last = first + ", " + w.last
				}
				built := m.built
				var fronts *model.FrontendChanges
				if r.IntN(2) == 0 { // as desired's delta pass says (model.FrontendChanges)
					fronts = &model.FrontendChanges{Base: prev, Of: w.cfg.Frontends,
						Names: model.ChangedFrontends(prev, w.cfg.Frontends)}
				}
				got, viewFronts := m.ViewExcept(w.s, w.cfg, fronts, nil)
				if msg := checkViewChanges(got, viewFronts, lastOut); msg != "" {
					t.Fatalf("step %d (%s): %s", step, w.last, msg)
				} else if viewFronts != nil {
					said++
				}
				lastOut = got.Frontends
				want := ViewExcept(w.s, w.cfg, nil)
				if !reflect.DeepEqual(got, want) {
					t.Fatalf("step %d (%s): the memo's view\n%s\nwant\n%s", step, w.last, viewString(got), viewString(want))
				}
				if idx, wantIdx := memoIndex(&m, w), indexOf(w.s, want); !reflect.DeepEqual(idx, wantIdx) {
					t.Fatalf("step %d (%s): index %v, want %v", step, w.last, idx, wantIdx)
				}
				if n, want := m.built-built, remade(was, wasBackend, w); step > 0 && n != want {
					// A view whole or by difference makes again only the
					// spares made of other objects than the last view's.
					t.Fatalf("step %d (%s): %d spares' backends made, want %d", step, w.last, n, want)
				}
			}
			if m.deltas < 200 {
				t.Errorf("%d of 400 views made from the last one, want most", m.deltas)
			}
			if m.named < 20 {
				t.Errorf("%d of 400 views took the frontends by name, want more", m.named)
			}
			if said < m.deltas {
				t.Errorf("%d of %d views made from the last one said their frontends' changes", said, m.deltas)
			}
		})
	}
}

// memoIndex is what m.IndexOf answers for every name of w's model and
// pool (a spare's name: none) and for the view's reject backend.
func memoIndex(m *ViewMemo, w *world) map[string]int {
	if !m.Indexed() {
		return nil
	}
	out := map[string]int{}
	names := []string{model.RejectBackend, "nothing"}
	for _, b := range w.cfg.Backends {
		names = append(names, b.Name)
	}
	for _, sp := range w.s.Spares {
		names = append(names, sp.Name)
	}
	for _, name := range names {
		if j, ok := m.IndexOf(name); ok {
			out[name] = j
		}
	}
	return out
}

// remade counts the spares of w's pool that the last view (of pool was,
// model backends wasBackend) did not make of the same objects: new to
// the pool, or another occupant, or the same one's backend another
// object.
func remade(was []Spare, wasBackend map[string]*model.Backend, w *world) int {
	now := map[string]*model.Backend{}
	for _, b := range w.cfg.Backends {
		now[b.Name] = b
	}
	n := 0
	for i, sp := range w.s.Spares {
		if i >= len(was) || was[i].Occupant != sp.Occupant || wasBackend[sp.Occupant] != now[sp.Occupant] {
			n++
		}
	}
	return n
}

// world is a model and its pool, edited at random.
type world struct {
	s    State
	cfg  model.Config
	n    int
	last string // the last edit
}

func newWorld(r *rand.Rand) *world {
	class := *be("", 0)
	class.Name, class.Service, class.Servers = "", "", nil
	w := &world{s: State{Classes: []model.Backend{class}}}
	w.cfg.Backends = []*model.Backend{{Name: "_nodes", Balance: "roundrobin"}}
	for range 12 {
		w.s.Spares = append(w.s.Spares, Spare{Name: SpareName(len(w.s.Spares))})
	}
	for range 8 {
		w.add(r)
	}
	return w
}

func (w *world) free() int {
	var free []int
	for i, sp := range w.s.Spares {
		if sp.Occupant == "" {
			free = append(free, i)
		}
	}
	if len(free) == 0 {
		return -1
	}
	return free[0]
}

// add is a new Service: its backend, its frontend, a free spare if any.
func (w *world) add(r *rand.Rand) {
	w.n++
	name := fmt.Sprintf("svc-%03d", w.n)
	b := be(name, 0, fmt.Sprintf("10.0.%d.%d:80", w.n/200, w.n%200+1))
	w.cfg.Backends = insertSorted(w.cfg.Backends, b)
	f := model.Frontend{Name: name, Backend: name, Binds: []model.Bind{{Addr: netip.MustParseAddr("192.0.2.10"), Port: uint16(1000 + w.n)}}}
	w.cfg.Frontends = insertFrontend(w.cfg.Frontends, f)
	if i := w.free(); i >= 0 && r.IntN(5) > 0 {
		w.s = w.s.Clone()
		w.s.Spares[i].Occupant = name
	}
}

func (w *world) edit(r *rand.Rand, step int) {
	w.cfg.Backends, w.cfg.Frontends = slices.Clone(w.cfg.Backends), slices.Clone(w.cfg.Frontends)
	pick := func() int { // a Service's backend
		for {
			i := r.IntN(len(w.cfg.Backends))
			if w.cfg.Backends[i].Name[0] != '_' {
				return i
			}
		}
	}
	if len(w.cfg.Backends) < 3 {
		w.last = "add"
		w.add(r)
		return
	}
	switch k := r.IntN(9); k {
	case 0, 1:
		w.last = "add"
		w.add(r)
	case 2:
		i := pick()
		name := w.cfg.Backends[i].Name
		w.last = "remove " + name
		w.cfg.Backends = slices.Delete(w.cfg.Backends, i, i+1)
		w.cfg.Frontends = slices.DeleteFunc(w.cfg.Frontends, func(f model.Frontend) bool { return f.Name == name })
		w.s = w.s.Clone()
		for j := range w.s.Spares {
			if w.s.Spares[j].Occupant == name {
				w.s.Spares[j].Occupant = ""
			}
		}
	case 3:
		i := pick()
		w.last = "servers of " + w.cfg.Backends[i].Name
		w.cfg.Backends[i] = w.cfg.Backends[i].WithServers([]model.Server{{Addr: netip.MustParseAddr("10.9.0.1"), Port: uint16(step)}})
	case 4:
		i := pick()
		name := w.cfg.Backends[i].Name
		w.last = "move " + name
		w.s = w.s.Clone()
		if j := w.free(); j >= 0 {
			for k := range w.s.Spares {
				if w.s.Spares[k].Occupant == name {
					w.s.Spares[k].Occupant = ""
				}
			}
			w.s.Spares[j].Occupant = name
		}
	case 5:
		if len(w.cfg.Frontends) == 0 {
			return
		}
		i := r.IntN(len(w.cfg.Frontends))
		w.last = "binds of " + w.cfg.Frontends[i].Name
		f := w.cfg.Frontends[i]
		f.Binds = append(slices.Clone(f.Binds), model.Bind{Addr: netip.MustParseAddr("192.0.2.11"), Port: uint16(step)})
		w.cfg.Frontends[i] = f
	case 6:
		w.last = "grow"
		w.s = w.s.Clone()
		w.s.Spares = append(w.s.Spares, Spare{Name: SpareName(len(w.s.Spares))})
	case 7:
		i := slices.IndexFunc(w.cfg.Frontends, func(f model.Frontend) bool { return f.Routed() })
		if i >= 0 {
			w.last = "unroute"
			w.cfg.Frontends = slices.Delete(w.cfg.Frontends, i, i+1)
			return
		}
		w.last = "route"
		b := w.cfg.Backends[pick()].Name
		f := model.Frontend{Name: "route", Binds: []model.Bind{{Port: 443}},
			Routes: []model.Route{{Backends: []model.WeightedBackend{{Name: b, Weight: 1}, {Name: "nothing", Weight: 1}}}}}
		w.cfg.Frontends = insertFrontend(w.cfg.Frontends, f)
	case 8:
		i := pick()
		name := w.cfg.Backends[i].Name
		w.last = "waits " + name
		w.s = w.s.Clone()
		for k := range w.s.Spares {
			if w.s.Spares[k].Occupant == name {
				w.s.Spares[k].Occupant = ""
			}
		}
	}
}

func insertSorted(bs []*model.Backend, b *model.Backend) []*model.Backend {
	i, _ := slices.BinarySearchFunc(bs, b.Name, func(x *model.Backend, n string) int { return strings.Compare(x.Name, n) })
	return slices.Insert(bs, i, b)
}

func insertFrontend(fs []model.Frontend, f model.Frontend) []model.Frontend {
	i, _ := slices.BinarySearchFunc(fs, f.Name, func(x model.Frontend, n string) int { return strings.Compare(x.Name, n) })
	return slices.Insert(fs, i, f)
}

// indexOf is the index poolView built before the memo kept it: each
// model backend's position in view, a spare's occupant at the spare's.
func indexOf(s State, view model.Config) map[string]int {
	occupant := map[string]string{}
	for _, sp := range s.Spares {
		occupant[sp.Name] = sp.Occupant
	}
	out := map[string]int{}
	for j, b := range view.Backends {
		name := b.Name
		if _, ok := SpareIndex(name); ok {
			name = occupant[name]
		}
		if name != "" {
			out[name] = j
		}
	}
	return out
}

func viewString(c model.Config) string {
	var b strings.Builder
	for _, f := range c.Frontends {
		fmt.Fprintf(&b, "  frontend %s -> %s %v\n", f.Name, f.Backend, f.Routes)
	}
	for _, be := range c.Backends {
		fmt.Fprintf(&b, "  backend %s (%s) %v\n", be.Name, be.Service, be.Servers)
	}
	return b.String()
}

// checkViewChanges checks the changes a view says of its frontends (fc),
// when it says some: made from the last view's very Frontends (base),
// every frontend changed or gone named (model.ChangedFrontends), the
// names sorted, each once.
func checkViewChanges(got model.Config, fc *model.FrontendChanges, base []model.Frontend) string {
	if fc == nil {
		return ""
	}
	names, ok := fc.ChangedFrom(got.Frontends, base)
	if !ok {
		return "FrontChanges not from the last view's Frontends to this one's"
	}
	if !slices.IsSorted(names) || len(slices.Compact(slices.Clone(names))) != len(names) {
		return fmt.Sprintf("FrontChanges.Names %v: not sorted, or a name twice", names)
	}
	for _, name := range model.ChangedFrontends(base, got.Frontends) {
		if !slices.Contains(names, name) {
			return fmt.Sprintf("frontend %s changed, not in FrontChanges.Names %v", name, names)
		}
	}
	return ""
}
