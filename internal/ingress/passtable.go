package ingress

import (
	"slices"

	"github.com/haproxy-k8s-sync/haproxy-k8s-sync/internal/model"
)

// A patched pass's HTTP table (passmemo.go): the last table with only the
// hosts a pass touched built again.

// patchTable is old with the hosts touched built again (those with no
// path left gone) and every other host's rules as they were, their
// actions at their new places; nil when old's actions are not one run
// per host (as tables.host makes them).
func (tb *tables) patchTable(old *model.HTTP, touched []string, https bool) *model.HTTP {
	c := *old // every other field of the table (Listeners, ...) as it was
	h := &c
	shape := tb.shapes[https] // counted by build, kept here: the hosts built again out, their new selves in
	h.Actions = make([]model.HTTPAction, 1, len(old.Actions)+4*len(touched))
	h.Actions[0] = old.Actions[0]
	h.Hosts = make([]model.HTTPHost, 0, len(old.Hosts)+len(touched))
	ti := 0
	emit := func() {
		if n := touched[ti]; len(tb.hosts[n]) > 0 {
			h.Hosts = append(h.Hosts, tb.host(h, n, https))
			shape.Host(h, &h.Hosts[len(h.Hosts)-1], 1)
		}
		ti++
	}
	for _, oh := range old.Hosts {
		// The table names a wildcard "+." (model.OneLabel), touched "*.":
		// the same order either way.
		for ti < len(touched) && hostOrder(model.OneLabel(touched[ti]), oh.Name) < 0 {
			emit()
		}
		if ti < len(touched) && model.OneLabel(touched[ti]) == oh.Name {
			shape.Host(old, &oh, -1)
			emit()
			continue
		}
		if len(oh.Rules) == 0 {
			h.Hosts = append(h.Hosts, oh)
			continue
		}
		first, n := oh.Rules[0].Action, len(oh.Rules)
		for j, r := range oh.Rules {
			if r.Action != first+j || first+n > len(old.Actions) {
				return nil
			}
		}
		base := len(h.Actions)
		h.Actions = append(h.Actions, old.Actions[first:first+n]...)
		if base != first {
			oh.Rules = slices.Clone(oh.Rules)
			for j := range oh.Rules {
				oh.Rules[j].Action = base + j
			}
		}
		h.Hosts = append(h.Hosts, oh)
	}
	for ti < len(touched) {
		emit()
	}
	h.SetShape(shape.Shape())
	return h
}
