package model

import "slices"

// The backends an HTTP table names: its actions' weighted backends, the
// backend their external authentication asks through, its TLS
// passthrough routes' backends. The pool of ready backends
// (internal/spares) renames them to the spares they occupy (WithBackends),
// and whatever else must know which backends a table uses (a spare's
// source ranges behind the fixed listener: BackendNames) reads them. Both
// are the one walk, walkBackends, so that a new way of naming a backend in
// the table is added once and neither can miss it.

// BackendNames are the backends h names, each once, in the order of the
// walk (each action's weighted backends, then its external
// authentication's; then the passthrough routes'); nil for a nil table.
func (h *HTTP) BackendNames() []string {
	var out []string
	h.walkBackends(func(name string) string {
		if !slices.Contains(out, name) {
			out = append(out, name)
		}
		return name
	}, false)
	return out
}

// WithBackends is h with every backend it names replaced by
// rename(name): its actions' weighted backends, the backend their
// external authentication asks through (ExtAuth.Backend, the internal
// frontend's use_backend: a Service's backend, a spare's name in the
// pool), and its TLS passthrough routes' backends (the splitter's map).
// h is unchanged: the actions, their backends, such an access and the
// passthrough are copied, the hosts and rules shared (nil for a nil
// table).
func (h *HTTP) WithBackends(rename func(string) string) *HTTP {
	return h.walkBackends(rename, true)
}

// walkBackends is the one walk of every backend h names: at is called on
// each name in turn. With write, the parts holding the names are copied
// and at's results written into the copy, which is returned; without, h
// is only read (and returned). nil for a nil table.
func (h *HTTP) walkBackends(at func(string) string, write bool) *HTTP {
	if h == nil {
		return nil
	}
	out := h
	if write {
		c := *h
		c.Actions = slices.Clone(h.Actions)
		out = &c
	}
	for i := range out.Actions {
		a := &out.Actions[i]
		if write && len(a.Backends) > 0 {
			a.Backends = slices.Clone(a.Backends)
		}
		for j := range a.Backends {
			if name := at(a.Backends[j].Name); write {
				a.Backends[j].Name = name
			}
		}
		if a.Access != nil && a.Access.ExtAuth != nil && a.Access.ExtAuth.Backend != "" {
			if name := at(a.Access.ExtAuth.Backend); write {
				access, ext := *a.Access, *a.Access.ExtAuth
				ext.Backend = name
				access.ExtAuth = &ext
				a.Access = &access
			}
		}
	}
	if h.Passthrough != nil {
		p := h.Passthrough
		if write {
			c := *h.Passthrough
			c.Routes = slices.Clone(c.Routes)
			p, out.Passthrough = &c, &c
		}
		for j := range p.Routes {
			if name := at(p.Routes[j].Backend); write {
				p.Routes[j].Backend = name
			}
		}
	}
	return out
}
