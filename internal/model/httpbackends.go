package model

import "slices"

// The backends an HTTP table names: its actions' weighted backends. The
// pool of ready backends (internal/spares) renames them to the spares
// they occupy, and whatever else must know which backends a table uses
// (a spare's source ranges behind the fixed listener) reads them here,
// so that a new way of naming a backend in the table is added once.

// BackendNames are the backends h's actions name, each once, in the
// order of the actions (nil for a nil table).
func (h *HTTP) BackendNames() []string {
	if h == nil {
		return nil
	}
	var out []string
	for _, a := range h.Actions {
		for _, wb := range a.Backends {
			if !slices.Contains(out, wb.Name) {
				out = append(out, wb.Name)
			}
		}
	}
	return out
}

// WithBackends is h with every backend its actions name replaced by
// rename(name): their weighted backends and the backend their external
// authentication asks through (ExtAuth.Backend, the internal frontend's
// use_backend: a Service's backend, a spare's name in the pool), and its
// TLS passthrough routes' backends (the splitter's map). h is unchanged:
// the actions, their backends, such an access and the passthrough are
// copied, the hosts and rules shared (nil for a nil table).
func (h *HTTP) WithBackends(rename func(string) string) *HTTP {
	if h == nil {
		return nil
	}
	out := *h
	out.Actions = slices.Clone(h.Actions)
	for i, a := range out.Actions {
		if a.Access != nil && a.Access.ExtAuth != nil && a.Access.ExtAuth.Backend != "" {
			access, ext := *a.Access, *a.Access.ExtAuth
			ext.Backend = rename(ext.Backend)
			access.ExtAuth = &ext
			a.Access = &access
		}
		if len(a.Backends) > 0 {
			a.Backends = slices.Clone(a.Backends)
			for j := range a.Backends {
				a.Backends[j].Name = rename(a.Backends[j].Name)
			}
		}
		out.Actions[i] = a
	}
	if h.Passthrough != nil {
		p := Passthrough{Routes: slices.Clone(h.Passthrough.Routes)}
		for j := range p.Routes {
			p.Routes[j].Backend = rename(p.Routes[j].Backend)
		}
		out.Passthrough = &p
	}
	return &out
}
