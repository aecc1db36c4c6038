package spares

import (
	"slices"
	"strings"

	"github.com/haproxy-k8s-sync/haproxy-k8s-sync/internal/model"
)

// The view from the pass's changes (issue 29). When the pool has the
// same spares as at the last view (the same names, classes and sizes:
// only occupants may differ) and the controller's own backends are the
// same objects, the view is the last one with only what changed made
// again: the spares whose occupant changed or is another object, and
// the frontends that are other values or name a backend whose HAProxy
// name changed. What changed is found by walking the model's backends
// and frontends beside the last ones (both sorted by name), comparing
// objects, not by building maps of every name; the backends keep their
// order, so nothing is sorted. Anything else is viewed whole.

// lastView is what the memo's delta starts from.
type lastView struct {
	// ok: the delta may start from it (occ and index are built). Without
	// it, spares, from, spareAt and out still say what the view's
	// spares were made of, for the next whole view to reuse (reuse).
	ok        bool
	from      []*model.Backend // per spare: the occupant its backend was made of (nil: free)
	frontends []model.Frontend // the model last viewed
	backends  []*model.Backend
	spares    []Spare // its pool's, a copy
	out       model.Config
	frontOut  []int          // per frontend of the model: its index in out.Frontends, -1 left out
	spareAt   []int          // per spare: its index in out.Backends
	occ       map[string]int // occupant -> its spare's index
	reject    bool           // out has the reject backend the view adds
	plain     bool           // no frontend is routed or HTTP (viewnamed.go)
}

// Indexed reports whether IndexOf answers for the last view (false
// before any view and after one the delta cannot start from).
func (m *ViewMemo) Indexed() bool {
	m.settle()
	return m.last.ok
}

// IndexOf is the index of model backend name in the last view's
// Backends (a spare's occupant: the spare's), false when the view has
// none (a backend waiting, a free spare's name). From the memo's
// occupants and a binary search of the view (sorted by name), not a map
// of every backend's name (issue 29: ~0.5 MB at 10,000 Services kept by
// every pass).
func (m *ViewMemo) IndexOf(name string) (int, bool) {
	if !m.Indexed() {
		return 0, false
	}
	l := &m.last
	if i, ok := l.occ[name]; ok {
		return l.spareAt[i], true
	}
	if _, spare := SpareIndex(name); spare {
		return 0, false
	}
	return slices.BinarySearchFunc(l.out.Backends, name, func(b *model.Backend, n string) int { return strings.Compare(b.Name, n) })
}

// frontends is the slice in which a whole view records where each
// frontend went (nil without a memo).
func (m *ViewMemo) frontends(n int) []int {
	if m == nil {
		return nil
	}
	return make([]int, n)
}

// remember keeps a whole view for the next delta (spares: the pool's,
// copied unless owned, the memo's own copy).
// from: per spare, the occupant its backend was made of.
func (m *ViewMemo) remember(spares []Spare, owned bool, cfg model.Config, own bool, out model.Config, reject bool, frontOut []int, from []*model.Backend) {
	if m == nil {
		return
	}
	if !owned {
		spares = slices.Clone(spares)
	}
	pos := make(map[string]int, len(spares))
	for i, sp := range spares {
		pos[sp.Name] = i
	}
	m.last = lastView{spares: spares, from: from, out: out, spareAt: make([]int, len(spares))}
	for j, b := range out.Backends {
		if i, ok := pos[b.Name]; ok {
			m.last.spareAt[i] = j
		}
	}
	if own || !model.BackendsSorted(cfg.Backends) || !model.FrontendsSorted(cfg.Frontends) {
		return // viewed whole next time too, reusing the spares' backends
	}
	l := lastView{ok: true, frontends: cfg.Frontends, backends: cfg.Backends, spares: spares, from: from, out: out,
		frontOut: frontOut, spareAt: m.last.spareAt, occ: make(map[string]int, len(spares)),
		reject: reject, plain: plainFrontends(cfg.Frontends)}
	for i, sp := range spares {
		if sp.Occupant == "" {
			continue
		}
		if _, dup := l.occ[sp.Occupant]; dup {
			return // two spares with one occupant: whole
		}
		l.occ[sp.Occupant] = i
	}
	m.last = l
}

// whole gives up the delta from the last view (the next view is whole)
// and keeps what it reuses: out is the view as far as it was made, its
// spares' backends those that spares and from say.
func (l *lastView) whole(out []*model.Backend) {
	*l = lastView{spares: l.spares, from: l.from, out: model.Config{Backends: out}, spareAt: l.spareAt}
}

// delta is the view of s and cfg made from the last one, which of its
// frontends it made again or left out against the last view's, and
// whether it could be (see above). fronts: which of cfg's frontends
// changed against the last pass's (nil: unknown, walked).
func (m *ViewMemo) delta(s State, cfg model.Config, fronts *model.FrontendChanges, own func(*model.Backend) bool) (model.Config, *model.FrontendChanges, bool) {
	if m == nil || m.laterView {
		return model.Config{}, nil, false
	}
	m.settle()
	if !m.last.ok || own != nil || len(s.Spares) != len(m.last.spares) || !m.sameClasses(s) {
		return model.Config{}, nil, false
	}
	l := &m.last
	for i, sp := range s.Spares {
		if p := l.spares[i]; sp.Name != p.Name || sp.Class != p.Class || sp.Slots != p.Slots {
			return model.Config{}, nil, false
		}
	}
	// Whether the frontends are sorted and whether one is routed (the
	// view's reject backend) are found in the walk of the frontends
	// below, not in two walks of their own (issue 29: 10,000 frontends,
	// a third of this view's time for one new Service).
	changed, ok := changedBackends(l.backends, cfg.Backends)
	if !ok {
		return model.Config{}, nil, false
	}
	// moved: the model backends whose HAProxy name may have changed.
	moved := make(map[string]bool, len(changed)+2)
	for _, name := range changed {
		if !pooled(&model.Backend{Name: name}) {
			return model.Config{}, nil, false // the controller's own: whole
		}
		moved[name] = true
	}
	var spares []int // whose view is made again
	for i, sp := range s.Spares {
		if was := l.spares[i].Occupant; was != sp.Occupant {
			moved[was], moved[sp.Occupant] = true, true
			spares = append(spares, i)
		} else if sp.Occupant != "" && moved[sp.Occupant] {
			spares = append(spares, i)
		}
	}
	delete(moved, "")
	for _, i := range spares { // occupants gone first, then the new ones
		if was := l.spares[i].Occupant; was != "" && l.occ[was] == i {
			delete(l.occ, was)
		}
	}
	for _, i := range spares {
		if o := s.Spares[i].Occupant; o != "" {
			if _, dup := l.occ[o]; dup {
				l.whole(l.out.Backends)           // nothing of the spares changed yet
				return model.Config{}, nil, false // two spares with one occupant: whole
			}
			l.occ[o] = i
		}
	}
	byName := func(name string) *model.Backend {
		i, found := slices.BinarySearchFunc(cfg.Backends, name, func(b *model.Backend, n string) int { return strings.Compare(b.Name, n) })
		if !found {
			return nil
		}
		return cfg.Backends[i]
	}
	out := model.Config{UDP: cfg.UDP, HTTPSHeld: cfg.HTTPSHeld, HTTPSClaimed: cfg.HTTPSClaimed, Backends: slices.Clone(l.out.Backends),
		Frontends: make([]model.Frontend, 0, len(cfg.Frontends))}
	for _, i := range spares {
		sp := s.Spares[i]
		o := byName(sp.Occupant)
		out.Backends[l.spareAt[i]] = m.spareView(s, sp, o)
		l.spares[i].Occupant, l.from[i] = sp.Occupant, o
	}
	haproxyName := func(name string) (string, bool) {
		if i, ok := l.occ[name]; ok {
			return s.Spares[i].Name, true
		}
		b := byName(name)
		return name, b == nil || !pooled(b)
	}
	base := l.out.Frontends // the last view's: the view's FrontendChanges' Base
	if names, ok := fronts.ChangedFrom(cfg.Frontends, l.frontends); ok {
		if frontOut, ok := l.named(&out, cfg, names, moved, haproxyName); ok { // viewnamed.go
			l.frontends, l.backends, l.out, l.frontOut = cfg.Frontends, cfg.Backends, out, frontOut
			m.deltas++
			m.named++
			return viewChanges(out, base, names)
		}
		out.Frontends = out.Frontends[:0]
	}
	frontOut := make([]int, len(cfg.Frontends))
	j := 0
	var names []string // the frontends made again or gone (the view's FrontendChanges)
	reject, plain := false, true
	// The last view's frontends kept are copied in runs (run: the next
	// ones of l.out.Frontends to append), not one by one.
	runAt, runN := 0, 0
	flush := func() {
		out.Frontends = append(out.Frontends, l.out.Frontends[runAt:runAt+runN]...)
		runN = 0
	}
	for i := range cfg.Frontends {
		f := &cfg.Frontends[i] // not a copy of each of 10,000
		if i > 0 && cfg.Frontends[i-1].Name >= f.Name {
			// Not sorted (model.FrontendsSorted): whole. The spares
			// and indices changed above are the last view's no more.
			l.whole(out.Backends)
			return model.Config{}, nil, false
		}
		routed := f.Routed()
		reject = reject || routed
		plain = plain && !routed && f.HTTP == nil
		for j < len(l.frontends) && l.frontends[j].Name < f.Name {
			names = append(names, l.frontends[j].Name) // gone
			j++
		}
		had := j < len(l.frontends) && l.frontends[j].Name == f.Name
		if had && model.SameFrontend(f, &l.frontends[j]) && !routed && f.HTTP == nil && !moved[f.Backend] {
			frontOut[i] = -1
			if k := l.frontOut[j]; k >= 0 {
				if runN > 0 && runAt+runN != k {
					flush()
				}
				if runN == 0 {
					runAt = k
				}
				frontOut[i] = len(out.Frontends) + runN
				runN++
			}
			j++
			continue
		}
		if had {
			j++
		}
		flush()
		names = append(names, f.Name)
		vf, ok := viewFrontend(*f, haproxyName)
		frontOut[i] = -1
		if ok {
			frontOut[i] = len(out.Frontends)
			out.Frontends = append(out.Frontends, vf)
		}
	}
	flush()
	for ; j < len(l.frontends); j++ {
		names = append(names, l.frontends[j].Name) // gone, after the last
	}
	if reject != l.reject {
		// The reject backend comes or goes: whole, as above.
		l.whole(out.Backends)
		return model.Config{}, nil, false
	}
	l.frontends, l.backends, l.out, l.frontOut, l.plain = cfg.Frontends, cfg.Backends, out, frontOut, plain
	m.deltas++
	return viewChanges(out, base, names)
}

// viewChanges is out and which of its frontends the delta made again or
// left out against base, the last view's (model.FrontendChanges; names
// may hold more: a routed or HTTP frontend is made again the same). A
// value of the pass: the memo keeps out, never it (it would hold base
// alive).
func viewChanges(out model.Config, base []model.Frontend, names []string) (model.Config, *model.FrontendChanges, bool) {
	return out, &model.FrontendChanges{Base: base, Of: out.Frontends, Names: names}, true
}

// sameClasses reports whether s has the classes of the last view.
func (m *ViewMemo) sameClasses(s State) bool {
	if len(s.Classes) != len(m.classes) {
		return false
	}
	for c := range s.Classes {
		if !sameClass(&m.classes[c], &s.Classes[c]) {
			return false
		}
	}
	return true
}

// changedBackends lists the names of the backends that are in one of
// was and now and not the same object in the other, both sorted by name;
// false when now is not sorted.
func changedBackends(was, now []*model.Backend) ([]string, bool) {
	return model.ChangedByName(was, now, func(b **model.Backend) string { return (*b).Name },
		func(a, b **model.Backend) bool { return *a == *b })
}
