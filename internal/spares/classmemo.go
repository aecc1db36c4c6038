package spares

import (
	"slices"

	"github.com/haproxy-k8s-sync/haproxy-k8s-sync/internal/model"
)

// The class of each backend, kept by object (issue 29). Occupy and Grow
// ask each pooled backend's class: a copy of its structure compared with
// every class, 10,000 copies a pass at 10,000 Services for one new
// Service. A ClassMemo keeps the classes of the last pass's backends and
// finds a backend that is the same object as in the last pass, among
// the same classes, in a walk of both passes' backends sorted by name:
// only the new and changed backends are compared.

// classesOf is each backend of bs's class in s (State.classOf), -1 for
// one with none or not pooled.
func (s State) classesOf(bs []*model.Backend) []int {
	out := make([]int, len(bs))
	for j, b := range bs {
		out[j] = -1
		if pooled(b) {
			out[j] = s.classOf(b)
		}
	}
	return out
}

// ClassMemo gives Occupy and Grow the classes of the backends of the
// last pass that are the same objects. The zero value is ready; not safe
// for concurrent use.
type ClassMemo struct {
	classes  []model.Backend  // the classes the last pass's indices are of
	backends []*model.Backend // the last pass's backends, sorted by name
	class    []int            // their classes
	// spare is the array of the call before the last, written again by
	// the next call (issue 29: a slice of 10,000 classes, 80 KB, was
	// ~17% of what an endpoint or node pass allocated): nothing but the
	// memo holds it (the occupy memo holds class, Grow copies what it
	// changes).
	spare []int
	// kept counts the classes taken from the last pass (tests).
	kept int
	occ  occupyMemo // OccupyFit from what changed (occupymemo.go)
}

// OccupyFit is spares.OccupyFit, the classes kept by object.
func (m *ClassMemo) OccupyFit(prev State, cfg model.Config, slots func(spare string) int) (State, []string) {
	return m.occ.fit(prev, cfg, slots, m.of(prev, cfg.Backends))
}

// SlotsChanged tells the memo that the spares' slots may have changed
// other than with their occupants (the driver read HAProxy's state back):
// the next OccupyFit walks every spare.
func (m *ClassMemo) SlotsChanged() { m.occ.out = nil }

// Grow is spares.Grow, the classes kept by object.
func (m *ClassMemo) Grow(s State, cfg model.Config, waiting []string, pol Policy) (State, bool) {
	if !pol.On() {
		return s, false
	}
	return growBy(s, cfg, waiting, pol, m.of(s, cfg.Backends))
}

// of is s.classesOf(bs), the last call's classes kept for the backends
// that are the same objects when s's classes begin with the last call's
// (Grow only adds classes): a backend that had none is asked again.
func (m *ClassMemo) of(s State, bs []*model.Backend) []int {
	sorted := model.BackendsSorted(bs)
	keep := sorted && len(m.classes) <= len(s.Classes)
	for c := 0; keep && c < len(m.classes); c++ {
		keep = sameClass(&m.classes[c], &s.Classes[c])
	}
	if keep && len(m.classes) == len(s.Classes) && model.SameSlice(bs, m.backends) {
		// The very backends of the last call among the same classes
		// (Grow after OccupyFit in one pass): its classes, not a
		// second slice of 10,000 (issue 29). Callers only read them.
		for _, c := range m.class {
			if c >= 0 {
				m.kept++
			}
		}
		return m.class
	}
	out := m.buffer(len(bs), sorted)
	i := 0
	for j, b := range bs {
		out[j] = -1
		if !pooled(b) {
			continue
		}
		if keep {
			for i < len(m.backends) && m.backends[i].Name < b.Name {
				i++
			}
			if i < len(m.backends) && m.backends[i] == b && m.class[i] >= 0 {
				out[j] = m.class[i]
				m.kept++
				continue
			}
		}
		out[j] = s.classOf(b)
	}
	m.classes = append(m.classes[:0], s.Classes...)
	if sorted {
		// The last call's array becomes the next call's buffer.
		m.spare = m.class
		m.backends, m.class = bs, slices.Clip(out)
		return m.class
	}
	m.backends, m.class, m.spare = nil, nil, nil
	return slices.Clip(out)
}

// buffer is an array of n classes for of to fill: the call before the
// last's when the memo will keep this call's (sorted) and nothing else
// holds it (the occupy memo keeps the classes it was last given; of
// hands out one array per call, so that is the last call's, unless
// OccupyFit skipped a call).
func (m *ClassMemo) buffer(n int, sorted bool) []int {
	if !sorted || n == 0 || cap(m.spare) < n || (len(m.occ.cls) > 0 && &m.spare[:1][0] == &m.occ.cls[0]) {
		return make([]int, n)
	}
	return m.spare[:n]
}
