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
// rename(name). h is unchanged: the actions and their backends are
// copied, the hosts and rules shared (nil for a nil table).
func (h *HTTP) WithBackends(rename func(string) string) *HTTP {
	if h == nil {
		return nil
	}
	out := *h
	out.Actions = slices.Clone(h.Actions)
	for i, a := range out.Actions {
		if len(a.Backends) == 0 {
			continue
		}
		a.Backends = slices.Clone(a.Backends)
		for j := range a.Backends {
			a.Backends[j].Name = rename(a.Backends[j].Name)
		}
		out.Actions[i] = a
	}
	return &out
}
