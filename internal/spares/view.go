package spares

import (
	"cmp"
	"slices"

	"github.com/haproxy-k8s-sync/haproxy-k8s-sync/internal/model"
)

// View is cfg as HAProxy runs it with the pool s: every occupied spare is
// its occupant (settings, servers, Service) under the spare's name, every
// free spare its class with no servers, frontends and routes name the
// spares, and the backends that are no spare's (the controller's own, or
// one still waiting) keep their names. A model backend that waits for a
// spare is left out, and so is a frontend that names it alone (its
// Service is served once the pool grows); a route's share to it goes to
// model.RejectBackend, which the view always has when some frontend is
// routed (so that a backend waiting is no structural change of its own).
// An HTTP frontend's table (model.HTTP) names spares the same way, a
// waiting backend's share model.RejectBackend (answered 500 by the
// frontend's own rules, render/http.go): the HTTP maps, written from the
// view, name the backends HAProxy has.
// Backends are sorted by name, as in any model.
func View(s State, cfg model.Config) model.Config { return ViewExcept(s, cfg, nil) }

// ViewExcept is View with the backends own names (a nil own names none)
// out of the pool: kept under their own names, as the controller's own
// backends are. The local driver so keeps the backends HAProxy 3.4+
// creates at runtime (runtimeapi/dynamic.go); Occupy and Grow are then
// given the model without them (Without).
func ViewExcept(s State, cfg model.Config, own func(*model.Backend) bool) model.Config {
	out, _ := viewExcept(s, cfg, nil, own, nil)
	return out
}

// viewExcept is ViewExcept, the spares' backends taken from memo when it
// has them (nil: none kept), and which frontends of the view the memo's
// delta made again against its last view (nil: unknown). fronts: which
// of cfg's frontends changed against the last pass's (nil: unknown).
func viewExcept(s State, cfg model.Config, fronts *model.FrontendChanges, own func(*model.Backend) bool, memo *ViewMemo) (model.Config, *model.FrontendChanges) {
	if out, viewFronts, ok := memo.delta(s, cfg, fronts, own); ok { // viewdelta.go
		return out, viewFronts
	}
	pooled := func(b *model.Backend) bool { return pooled(b) && (own == nil || !own(b)) }
	idx := s.index()
	out := model.Config{UDP: cfg.UDP, HTTPSHeld: cfg.HTTPSHeld, HTTPSClaimed: cfg.HTTPSClaimed, Frontends: make([]model.Frontend, 0, len(cfg.Frontends)),
		Backends: make([]*model.Backend, 0, len(cfg.Backends)+len(s.Spares)+1)}
	byName := make(map[string]*model.Backend, len(cfg.Backends))
	for _, b := range cfg.Backends {
		byName[b.Name] = b
	}
	haproxyName := func(name string) (string, bool) {
		if i := idx[name]; i > 0 {
			return s.Spares[i-1].Name, true
		}
		b := byName[name]
		return name, b == nil || !pooled(b)
	}
	reject := slices.ContainsFunc(cfg.Frontends, func(f model.Frontend) bool { return f.Routed() })
	frontOut := memo.frontends(len(cfg.Frontends))
	for i, f := range cfg.Frontends {
		f, ok := viewFrontend(f, haproxyName)
		if frontOut != nil {
			frontOut[i] = -1
		}
		if !ok {
			continue
		}
		if frontOut != nil {
			frontOut[i] = len(out.Frontends)
		}
		out.Frontends = append(out.Frontends, f)
	}
	for _, b := range cfg.Backends {
		if !pooled(b) {
			out.Backends = append(out.Backends, b)
		}
	}
	if reject && byName[model.RejectBackend] == nil {
		out.Backends = append(out.Backends, &model.Backend{Name: model.RejectBackend, Balance: "roundrobin", Servers: []model.Server{}})
	}
	from := memo.begin(s)
	for i, sp := range s.Spares {
		o := byName[sp.Occupant]
		if from != nil {
			from[i] = o
		}
		if b := memo.reuse(i, sp, o); b != nil {
			out.Backends = append(out.Backends, b)
			continue
		}
		out.Backends = append(out.Backends, memo.spareView(s, sp, o))
	}
	slices.SortFunc(out.Backends, func(a, b *model.Backend) int { return cmp.Compare(a.Name, b.Name) })
	if memo != nil && memo.laterView {
		memo.later(s, cfg, own, out, reject, frontOut, from)
		return out, nil
	}
	memo.remember(s.Spares, false, cfg, own != nil, out, reject, frontOut, from)
	return out, nil
}

// viewFrontend is f as the view has it, its backends in HAProxy's names
// (haproxyName: a name and whether it is served), and false when it is
// left out (its one backend waits for a spare).
func viewFrontend(f model.Frontend, haproxyName func(string) (string, bool)) (model.Frontend, bool) {
	if f.Routed() {
		f.Routes = slices.Clone(f.Routes)
		for i, r := range f.Routes {
			r.Backends = slices.Clone(r.Backends)
			for j, wb := range r.Backends {
				n, ok := haproxyName(wb.Name)
				if !ok {
					n = model.RejectBackend
				}
				r.Backends[j].Name = n
			}
			f.Routes[i] = r
		}
	} else if f.HTTP != nil {
		f.HTTP = f.HTTP.WithBackends(func(name string) string {
			if n, ok := haproxyName(name); ok {
				return n
			}
			return model.RejectBackend
		})
	} else if f.Backend != "" {
		n, ok := haproxyName(f.Backend)
		if !ok {
			return f, false
		}
		f.Backend = n
	}
	return f, true
}

// spareView is the backend the view makes of sp with occupant o (nil:
// free), kept by memo.
func (m *ViewMemo) spareView(s State, sp Spare, o *model.Backend) *model.Backend {
	b := s.Classes[sp.Class]
	if o != nil {
		b = *o
	}
	b.Name, b.SourceChecked, b.Slots = sp.Name, s.Classes[sp.Class].SourceChecked, sp.Slots
	m.keep()
	return &b
}

// Without is cfg without the backends own names, for Occupy, Grow and
// Restore beside ViewExcept: its Backends a new slice, the rest shared.
func Without(cfg model.Config, own func(*model.Backend) bool) model.Config {
	if own == nil {
		return cfg
	}
	out := cfg
	out.Changes = nil
	out.Backends = slices.DeleteFunc(slices.Clone(cfg.Backends), own)
	return out
}
