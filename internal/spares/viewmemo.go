package spares

import "github.com/haproxy-k8s-sync/haproxy-k8s-sync/internal/model"

// ViewMemo keeps the spares' backends of the last view, by object: a
// spare whose occupant is the very model backend of the last pass (or
// free both times), of the same class and size, is the very backend of
// the last view, not a new copy. A new Service among 10,000 so costs the
// view one backend, not 10,000 (issue 29), and the driver's plan, which
// compares backends by pointer and servers by slice (plan.AssignFrom),
// finds the others unchanged at once. The zero value is ready; not safe
// for concurrent use. It holds the backends of one view.
type ViewMemo struct {
	classes []model.Backend        // the classes of the last view
	spares  map[string]viewedSpare // spare name -> what it was viewed from
	same    []bool                 // per class of the view being made: as in classes
	gen     uint64                 // counts views
	touched int                    // spares of the view being made
	// built counts the spares' backends made rather than reused, deltas
	// the views made from the last one (viewdelta.go), named those of
	// them whose frontends were taken by name (viewnamed.go) (tests).
	built, deltas, named int
	last                 lastView // what the next view's delta starts from
	// pending is the last view when ViewLater made it, its maps not
	// built (viewlater.go); laterView: ViewLater is making one.
	pending   *pendingView
	laterView bool
}

type viewedSpare struct {
	occupant *model.Backend // nil: free
	class    int
	slots    int
	view     *model.Backend
	gen      uint64
}

// ViewExcept is spares.ViewExcept(s, cfg, own), reusing the backends of
// the last view that are made of the same objects. fronts says which of
// cfg's frontends changed against the last pass's (the pass's
// model.FrontendChanges; nil: unknown); the view's own, against the last
// view's Frontends, is returned beside it (nil: unknown; viewdelta.go).
// Neither is kept: both are values of the pass.
func (m *ViewMemo) ViewExcept(s State, cfg model.Config, fronts *model.FrontendChanges, own func(*model.Backend) bool) (model.Config, *model.FrontendChanges) {
	return viewExcept(s, cfg, fronts, own, m)
}

// begin compares s's classes with the last view's.
func (m *ViewMemo) begin(s State) {
	if m == nil {
		return
	}
	m.gen, m.touched = m.gen+1, 0
	if m.spares == nil && !m.laterView {
		m.spares = make(map[string]viewedSpare, len(s.Spares))
	}
	m.same = m.same[:0]
	for c := range s.Classes {
		m.same = append(m.same, c < len(m.classes) && sameClass(&m.classes[c], &s.Classes[c]))
	}
	m.classes = append(m.classes[:0], s.Classes...)
}

// sameClass compares two classes as the view uses them: their structure
// (SameStructure covers every field but the servers; a class has none).
func sameClass(a, b *model.Backend) bool {
	return a.SameStructure(b) && len(a.Servers) == 0 && len(b.Servers) == 0
}

// reuse is the backend the last view made of sp with occupant o, nil when
// it made none of the same objects.
func (m *ViewMemo) reuse(sp Spare, o *model.Backend) *model.Backend {
	if m == nil {
		return nil
	}
	v, ok := m.spares[sp.Name]
	if !ok || v.occupant != o || v.class != sp.Class || v.slots != sp.Slots || !m.same[sp.Class] {
		return nil
	}
	if m.laterView {
		return v.view // the map is left as it is: dropped at the view's end (later)
	}
	v.gen = m.gen
	m.spares[sp.Name] = v
	m.touched++
	return v.view
}

// keep records the backend made of sp with occupant o.
func (m *ViewMemo) keep(sp Spare, o, b *model.Backend) {
	if m == nil {
		return
	}
	m.built++
	m.touched++
	if m.laterView {
		return // built later (settle)
	}
	m.spares[sp.Name] = viewedSpare{occupant: o, class: sp.Class, slots: sp.Slots, view: b, gen: m.gen}
}

// end forgets the spares this view did not have.
func (m *ViewMemo) end() {
	if m == nil || m.laterView || m.touched == len(m.spares) {
		return
	}
	for name, v := range m.spares {
		if v.gen != m.gen {
			delete(m.spares, name)
		}
	}
}
