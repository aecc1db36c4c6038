package spares

import (
	"slices"

	"github.com/haproxy-k8s-sync/haproxy-k8s-sync/internal/model"
)

// A view whose memo is built later (issue 29). The pool's growth is the
// first pass's at a start: the memo's maps of the grown view (every
// spare's entry, the delta's index and occupants, ~2-3 MB at 20,000
// spares) would be built into that pass's live heap, the controller's
// highest. ViewLater makes the view as ViewExcept does, reusing the
// backends the memo has, but keeps only what it was made of; the maps
// are built from that by the next call that needs them (settle).

// pendingView is a view made by ViewLater whose maps are not built.
type pendingView struct {
	spares   []Spare // the pool's, a copy
	cfg      model.Config
	own      bool
	out      model.Config
	reject   bool
	frontOut []int
	from     []*model.Backend // per spare: the occupant its backend was made of
}

// ViewLater is ViewExcept, the memo's maps of this view built when the
// next view or Index needs them rather than now. The view's backends are
// the memo's (the spares made of the same objects as in the last view
// are its very backends), and the next view reuses this one's.
func (m *ViewMemo) ViewLater(s State, cfg model.Config, own func(*model.Backend) bool) model.Config {
	m.settle()
	m.laterView = true
	out, _ := viewExcept(s, cfg, nil, own, m)
	m.laterView = false
	return out
}

// later records a whole view made by ViewLater (viewExcept, in place of
// remember): the maps of the last view are dropped, this one's left to
// settle.
func (m *ViewMemo) later(s State, cfg model.Config, own func(*model.Backend) bool, out model.Config, reject bool, frontOut []int, from []*model.Backend) {
	m.last = lastView{}
	m.pending = &pendingView{spares: slices.Clone(s.Spares), cfg: cfg, own: own != nil, out: out,
		reject: reject, frontOut: frontOut, from: from}
	m.pending.cfg.Changes = nil
}

// settle builds the maps of a view ViewLater made, as ViewExcept would
// have built them.
func (m *ViewMemo) settle() {
	if m == nil || m.pending == nil {
		return
	}
	p := m.pending
	m.pending = nil
	m.remember(p.spares, true, p.cfg, p.own, p.out, p.reject, p.frontOut, p.from)
}

// Built reports whether the memo's maps of its last view are built: false
// after ViewLater until the next view or Index.
func (m *ViewMemo) Built() bool { return m.pending == nil }
