package gateway

import (
	"maps"

	gwv1 "sigs.k8s.io/gateway-api/apis/v1"
)

// RouteMemo remembers the last valid rules of each GRPCRoute across
// passes: a route changed into one that cannot be served keeps serving
// its last valid version (its parents' Accepted False says why and that
// the last valid version is served), so bad input loses nothing; a route
// never seen valid serves nothing. The caller (the gateway loop) owns it
// and passes it in Options.Routes; nil: no memory. Not safe for
// concurrent use: one pass at a time.
type RouteMemo struct {
	last map[RouteKey]*gwv1.HTTPRoute
	used map[RouteKey]bool // seen in the pass under way
}

func (m *RouteMemo) begin() {
	if m != nil {
		m.used = map[RouteKey]bool{}
	}
}

// end forgets the routes the pass did not see (deleted).
func (m *RouteMemo) end() {
	if m == nil {
		return
	}
	maps.DeleteFunc(m.last, func(k RouteKey, _ *gwv1.HTTPRoute) bool { return !m.used[k] })
	m.used = nil
}

// rules are the rules to serve for route k: h when valid (remembered),
// else the last valid ones (nil: none), and whether they are the kept ones.
func (m *RouteMemo) rules(k RouteKey, h *gwv1.HTTPRoute) (*gwv1.HTTPRoute, bool) {
	if m == nil {
		return h, false
	}
	m.used[k] = true
	if h != nil {
		if m.last == nil {
			m.last = map[RouteKey]*gwv1.HTTPRoute{}
		}
		m.last[k] = h
		return h, false
	}
	return m.last[k], m.last[k] != nil
}
