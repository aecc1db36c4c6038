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
	classes []model.Backend // the classes of the last view
	same    []bool          // per class of the view being made: as in classes
	// built counts the spares' backends made rather than reused, deltas
	// the views made from the last one (viewdelta.go), named those of
	// them whose frontends were taken by name (viewnamed.go) (tests).
	built, deltas, named int
	last                 lastView // what the next view reuses and its delta starts from
	// pending is the last view when ViewLater made it, its maps not
	// built (viewlater.go); laterView: ViewLater is making one.
	pending   *pendingView
	laterView bool
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

// begin compares s's classes with the last view's, and returns the
// slice in which the view records each spare's occupant (nil without a
// memo).
func (m *ViewMemo) begin(s State) []*model.Backend {
	if m == nil {
		return nil
	}
	m.same = m.same[:0]
	for c := range s.Classes {
		m.same = append(m.same, c < len(m.classes) && sameClass(&m.classes[c], &s.Classes[c]))
	}
	m.classes = append(m.classes[:0], s.Classes...)
	return make([]*model.Backend, len(s.Spares))
}

// sameClass compares two classes as the view uses them: their structure
// (SameStructure covers every field but the servers; a class has none).
func sameClass(a, b *model.Backend) bool {
	return a.SameStructure(b) && len(a.Servers) == 0 && len(b.Servers) == 0
}

// reuse is the backend the last view made of sp, the pool's spare i,
// with occupant o, nil when it made none of the same objects. The last
// view's spare at i is looked at, not a map of every spare's name
// (issue 29: ~2 MB at 20,000 spares kept by every pass): the pool only
// appends spares and changes their occupants, so a spare keeps its
// place while it is the same.
func (m *ViewMemo) reuse(i int, sp Spare, o *model.Backend) *model.Backend {
	if m == nil {
		return nil
	}
	l := &m.last
	if i >= len(l.spares) || i >= len(l.from) || !m.same[sp.Class] {
		return nil
	}
	if p := l.spares[i]; p.Name != sp.Name || p.Class != sp.Class || p.Slots != sp.Slots || l.from[i] != o ||
		p.Occupant != sp.Occupant {
		return nil
	}
	return l.out.Backends[l.spareAt[i]]
}

// keep records that a spare's backend was made, not reused.
func (m *ViewMemo) keep() {
	if m != nil {
		m.built++
	}
}
