package spares

import (
	"slices"

	"github.com/haproxy-k8s-sync/haproxy-k8s-sync/internal/model"
)

// Spares that check sources. Behind the fixed listener (tproxy mode) a
// restricted Service's source rule is in its backend, so whether a spare
// carries one is part of its structure: model.Backend.SourceChecked, a
// class setting like any other. A restricted Service takes a spare of a
// class that checks sources (a rule and two ACL files of the spare's own,
// render/spareranges.go), an unrestricted one a spare with neither; a
// Service whose ranges come or go moves to a spare of the other class, a
// map change. Policy.SourceTwin keeps free spares of the default class's
// twin (the same settings, the other way), so that the first restricted
// Service among unrestricted ones takes one with no reload.

// SourceMarks marks, pass after pass, the backends of a model that check
// sources (Of). It keeps the last pass, so that a pass that changes only
// servers (model.Config.Changes) is marked in the size of its change and
// keeps its Changes: the driver's servers-only path still takes it.
type SourceMarks struct {
	in, out   []*model.Backend
	frontends []model.Frontend
	// checked counts, per backend, the listened restricted frontends
	// that name it (none: not in the map), kept from pass to pass.
	checked map[string]int
	// copies: the marked copy each backend of the last whole pass got,
	// by object: a backend that is the same object and keeps its mark is
	// the same copy (ViewMemo then keeps its spare's backend).
	copies map[*model.Backend]*model.Backend
}

// Of is cfg with every pooled backend that a frontend listened (for
// which listened holds) and restricted names marked SourceChecked, and
// every other one not; a backend whose mark changes is a copy, the
// others are cfg's own. Backends keep their order. fronts, when not nil,
// says which of cfg's frontends changed against the last pass's (the
// pass's model.FrontendChanges).
func (m *SourceMarks) Of(cfg model.Config, fronts *model.FrontendChanges, listened func(model.Frontend) bool) model.Config {
	ch := cfg.Changes
	if ch != nil && m.in != nil && model.SameSlice(ch.Base, m.in) && model.SameSlice(cfg.Frontends, m.frontends) &&
		len(cfg.Backends) == len(m.in) {
		if m.out == nil { // nothing marked: cfg as it is
			m.in = cfg.Backends
			return cfg
		}
		base, out := m.out, slices.Clone(m.out)
		for _, i := range ch.Backends {
			if i >= 0 && i < len(out) {
				out[i] = mark(cfg.Backends[i], m.checked[cfg.Backends[i].Name] > 0)
				if out[i] != cfg.Backends[i] && m.copies != nil {
					m.copies[cfg.Backends[i]] = out[i] // the next whole pass keeps only its own
				}
			}
		}
		m.in, m.out = cfg.Backends, out
		cfg.Backends = out
		cfg.Changes = &model.Changes{Base: base, Backends: ch.Backends}
		return cfg
	}
	checked := m.count(cfg, fronts, listened)
	m.in, m.frontends, m.checked, m.out = cfg.Backends, cfg.Frontends, checked, nil
	if len(checked) == 0 && !slices.ContainsFunc(cfg.Backends, func(b *model.Backend) bool { return b.SourceChecked }) {
		m.copies = nil
		return cfg
	}
	out := make([]*model.Backend, len(cfg.Backends))
	copies := make(map[*model.Backend]*model.Backend, len(m.copies))
	for i, b := range cfg.Backends {
		if c, ok := m.copies[b]; ok && c.SourceChecked == (checked[b.Name] > 0 && pooled(b)) {
			out[i] = c
		} else {
			out[i] = mark(b, checked[b.Name] > 0)
		}
		if out[i] != b {
			copies[b] = out[i]
		}
	}
	m.out, m.copies = out, copies
	cfg.Backends, cfg.Changes = out, nil
	return cfg
}

// count is the checked counts of cfg's frontends: from the last pass's
// when fronts says which frontends changed against the last pass's very
// Frontends (model.FrontendChanges: desired's delta, a new Service),
// only those looked at (issue 29: 10,000 frontends a pass); else every
// frontend counted anew.
func (m *SourceMarks) count(cfg model.Config, fronts *model.FrontendChanges, listened func(model.Frontend) bool) map[string]int {
	counts := func(f *model.Frontend) bool { return f.Restricted() && f.Backend != "" && listened(*f) }
	if names, ok := fronts.ChangedFrom(cfg.Frontends, m.frontends); ok && m.checked != nil {
		for _, name := range names {
			if i, was := model.FrontendIndex(m.frontends, name); was && counts(&m.frontends[i]) {
				if m.checked[m.frontends[i].Backend]--; m.checked[m.frontends[i].Backend] == 0 {
					delete(m.checked, m.frontends[i].Backend)
				}
			}
			if i, now := model.FrontendIndex(cfg.Frontends, name); now && counts(&cfg.Frontends[i]) {
				m.checked[cfg.Frontends[i].Backend]++
			}
		}
		return m.checked
	}
	checked := map[string]int{}
	for i := range cfg.Frontends {
		if f := &cfg.Frontends[i]; counts(f) {
			checked[f.Backend]++
		}
	}
	return checked
}

// mark is b with SourceChecked set to checked (b itself when it has it).
func mark(b *model.Backend, checked bool) *model.Backend {
	checked = checked && pooled(b)
	if b.SourceChecked == checked {
		return b
	}
	c := *b
	c.SourceChecked = checked
	return &c
}

// twin is class c with the other SourceChecked.
func twin(c model.Backend) model.Backend {
	c.SourceChecked = !c.SourceChecked
	return c
}

// Behind is cfg and pol as the pool takes them: behind the fixed
// listener (listened, render.Options.Listened, not nil) the backends
// marked (Of), the default class's twin kept (Policy.SourceTwin) and a
// large spare per class (Policy.Sized, sized.go): there every new
// Service takes a spare; otherwise cfg and pol as they are. The driver and `render
// --backend-pool` both go through it.
func (m *SourceMarks) Behind(cfg model.Config, fronts *model.FrontendChanges, pol Policy, listened func(model.Frontend) bool) (model.Config, Policy) {
	if listened == nil {
		return cfg, pol
	}
	pol.SourceTwin, pol.Sized = true, true
	return m.Of(cfg, fronts, listened), pol
}
