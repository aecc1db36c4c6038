package spares

import (
	"slices"
	"strings"

	"github.com/haproxy-k8s-sync/haproxy-k8s-sync/internal/model"
)

// OccupyFit from what changed (issue 29). occupyFit walks every spare,
// builds a map of the 10,000 backends by name and asks each occupied
// spare's slots: ~2 ms a pass at 10,000 Services for one new Service.
// When the pool it is given is the one it returned last (the driver's
// pass after a pass that applied), only the spares of the backends that
// changed (a new object, another class, gone) and the backends that
// waited or had outgrown their spare are looked at; every other backend
// keeps its spare, as occupyFit would keep it. occupyFit is the
// reference: TestOccupyMemoRandomEdits compares the two over random
// edits.
//
// What it takes for granted: a spare's slots (the slots func) change only
// for a spare whose occupant changes, or through a reload, which sizes
// every occupied spare for its occupant's servers anyway; after the
// driver reads HAProxy's state back, ClassMemo.SlotsChanged has the next
// pass walk every spare. A backend that was not outgrown is not asked
// again while it is the same object in the same spare.

// occupyMemo is the last occupyFit's result, kept by object. The zero
// value is ready.
type occupyMemo struct {
	out      []Spare          // the Spares of the State returned last
	classes  int              // how many classes it had
	backends []*model.Backend // the backends it placed, sorted by name
	cls      []int            // their classes
	// at is, per backend of backends, the index in out of the spare it
	// occupies (-1: none): 4 B a backend, where a map of the occupants
	// kept ~0.4 MB at 10,000 (issue 29's peak). occupyFit and delta
	// leave no occupant that is not one of the backends.
	at       []int32
	waiting  []string // the backends it left waiting
	outgrown []string // occupants left in a spare they outgrew
	// reused counts the passes computed from what changed (tests).
	reused int
}

// fit is occupyFit(prev, cfg, slots, cls), from what changed when it can.
func (m *occupyMemo) fit(prev State, cfg model.Config, slots func(string) int, cls []int) (State, []string) {
	sorted := model.BackendsSorted(cfg.Backends) // one walk of the names: ~0.1 ms at 10,000
	next, waiting, ok := m.delta(prev, cfg, slots, cls, sorted)
	if !ok {
		next, waiting = occupyFit(prev, cfg, slots, cls)
		m.rebuild(next, cfg, slots, sorted)
	} else {
		m.reused++
	}
	m.out, m.classes, m.backends, m.cls, m.waiting = next.Spares, len(next.Classes), nil, nil, waiting
	if sorted {
		m.backends, m.cls = cfg.Backends, cls
	} else {
		m.out, m.at = nil, nil
	}
	return next, waiting
}

// rebuild makes the occupants' places and the outgrown list of next
// anew (cfg's backends sorted by name, or nothing is kept).
func (m *occupyMemo) rebuild(next State, cfg model.Config, slots func(string) int, sorted bool) {
	m.outgrown, m.at = m.outgrown[:0], nil
	if !sorted {
		return
	}
	byName := make(map[string]int, len(cfg.Backends)) // while it rebuilds: not kept
	for j, b := range cfg.Backends {
		byName[b.Name] = j
	}
	at := make([]int32, len(cfg.Backends))
	for j := range at {
		at[j] = -1
	}
	for i, sp := range next.Spares {
		if sp.Occupant == "" {
			continue
		}
		j, ok := byName[sp.Occupant]
		if !ok {
			return // not occupyFit's: the next pass walks every spare
		}
		at[j] = int32(i)
		if b := cfg.Backends[j]; slots != nil && len(b.Servers) > slots(sp.Name) {
			m.outgrown = append(m.outgrown, sp.Occupant)
		}
	}
	m.at = at
}

// realign is m.at for bs (sorted by name) instead of m.backends, and the
// spares of the backends gone.
func (m *occupyMemo) realign(bs []*model.Backend) (at []int32, gone map[string]int) {
	at = make([]int32, len(bs))
	i := 0
	for j, b := range bs {
		for i < len(m.backends) && m.backends[i].Name < b.Name {
			if k := m.at[i]; k >= 0 {
				if gone == nil {
					gone = map[string]int{}
				}
				gone[m.backends[i].Name] = int(k)
			}
			i++
		}
		at[j] = -1
		if i < len(m.backends) && m.backends[i].Name == b.Name {
			at[j] = m.at[i]
			i++
		}
	}
	for ; i < len(m.backends); i++ {
		if k := m.at[i]; k >= 0 {
			if gone == nil {
				gone = map[string]int{}
			}
			gone[m.backends[i].Name] = int(k)
		}
	}
	return at, gone
}

// delta is occupyFit from the backends that changed since the last call;
// false when prev is not the State it returned or cfg is not sorted.
func (m *occupyMemo) delta(prev State, cfg model.Config, slots func(string) int, cls []int, sorted bool) (State, []string, bool) {
	if m.out == nil || m.at == nil || len(prev.Spares) != len(m.out) || len(prev.Spares) == 0 || &prev.Spares[0] != &m.out[0] ||
		len(prev.Classes) != m.classes || !sorted {
		return State{}, nil, false
	}
	// The backends to look at: changed, gone, waiting or outgrown.
	look := map[string]bool{}
	for _, name := range m.waiting {
		look[name] = true
	}
	for _, name := range m.outgrown {
		look[name] = true
	}
	bs, i := cfg.Backends, 0
	shifted := len(bs) != len(m.backends) // a backend came or went: m.at realigned
	for j, b := range bs {
		for i < len(m.backends) && m.backends[i].Name < b.Name {
			look[m.backends[i].Name] = true // gone
			i, shifted = i+1, true
		}
		if i < len(m.backends) && m.backends[i].Name == b.Name {
			if m.backends[i] != b || m.cls[i] != cls[j] {
				look[b.Name] = true
			}
			i++
			continue
		}
		look[b.Name], shifted = true, true // new
	}
	for ; i < len(m.backends); i++ {
		look[m.backends[i].Name], shifted = true, true
	}
	if len(look) > len(bs)/4+8 {
		return State{}, nil, false // most changed: the whole walk is as quick
	}
	// The places of the occupants: m.at itself when bs has the names of
	// m.backends (an endpoint or node pass allocates none), else
	// realigned, the spares of the backends gone aside.
	at, gone := m.at, map[string]int(nil)
	if shifted {
		at, gone = m.realign(bs)
	}
	// next shares prev's spares until one changes hands (own): an
	// endpoint or node pass keeps every occupant, and a copy of 10,000
	// spares a pass (~0.6 MB) was most of what the pool's placing
	// allocated in tproxy mode's churn (issue 29).
	next, owned := prev, false
	own := func() {
		if !owned {
			next, owned = prev.Clone(), true
		}
	}
	want := make(map[string]int, len(look)) // name -> index in cfg.Backends
	in := make(map[string]int, len(look))   // of those in cfg.Backends, pooled or not
	for name := range look {
		if j, ok := slices.BinarySearchFunc(bs, name, func(b *model.Backend, n string) int { return strings.Compare(b.Name, n) }); ok {
			in[name] = j
			if pooled(bs[j]) {
				want[name] = j
			}
		}
	}
	occupied := func(name string) (int, bool) { // the spare name occupies in prev
		if j, ok := in[name]; ok {
			return int(at[j]), at[j] >= 0
		}
		k, ok := gone[name]
		return k, ok
	}
	fits := func(i int, b *model.Backend) bool {
		return slots == nil || len(b.Servers) <= slots(next.Spares[i].Name)
	}
	freed := map[int]bool{}
	var touched, outgrown, place []int // spares whose occupant changes; spares outgrown; backends with none
	for name := range look {
		j, wanted := want[name]
		i, ok := occupied(name)
		if !ok {
			if wanted {
				place = append(place, j)
			}
			continue
		}
		if wanted && next.sameClass(next.Spares[i].Class, cls[j]) {
			if !fits(i, bs[j]) {
				outgrown = append(outgrown, i)
			}
			continue
		}
		own()
		next.Spares[i].Occupant, freed[i] = "", true
		touched = append(touched, i)
		if wanted {
			place = append(place, j)
		}
	}
	slices.Sort(outgrown) // occupyFit moves them in the spares' order
	free := func(c int, b *model.Backend, fit bool) int {
		return bestFree(next.Spares, c, func(i int) bool { return !freed[i] && (!fit || fits(i, b)) })
	}
	var stuck []string
	for _, i := range outgrown {
		b := bs[want[next.Spares[i].Occupant]]
		if j := free(next.Spares[i].Class, b, true); j >= 0 {
			own()
			next.Spares[j].Occupant = b.Name
			next.Spares[i].Occupant, freed[i] = "", true
			touched = append(touched, i, j)
			continue
		}
		stuck = append(stuck, b.Name)
	}
	slices.Sort(place) // the backends with no spare, in the order of their names
	var waiting []string
	for _, j := range place {
		b := bs[j]
		i := free(cls[j], b, true)
		if i < 0 {
			i = free(cls[j], b, false)
		}
		if i < 0 {
			waiting = append(waiting, b.Name)
			continue
		}
		own()
		next.Spares[i].Occupant = b.Name
		touched = append(touched, i)
		if !fits(i, b) {
			stuck = append(stuck, b.Name) // in a spare it outgrows: asked again
		}
	}
	for _, i := range touched {
		name := prev.Spares[i].Occupant
		if name == "" {
			continue
		}
		if j, ok := in[name]; ok && at[j] == int32(i) {
			at[j] = -1
		}
	}
	for _, i := range touched {
		if name := next.Spares[i].Occupant; name != "" {
			at[in[name]] = int32(i) // placed from cfg.Backends: in it
		}
	}
	m.at = at
	m.outgrown = stuck
	return next, waiting, true
}
