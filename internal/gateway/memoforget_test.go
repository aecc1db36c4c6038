package gateway

import (
	"net/netip"
	"testing"

	gwv1 "sigs.k8s.io/gateway-api/apis/v1"
)

// TestMemoForgetsGoneRoutes: the memo keeps a route only while a pass
// sees its object: one deleted is forgotten at the end of the pass that
// does not see it (a walk of every route kept), one replaced by a new
// object of its name as the new one is met (no walk).
func TestMemoForgetsGoneRoutes(t *testing.T) {
	in := manyRoutes(10, 2)
	opts := Options{Addresses: []netip.Addr{lbAddr}, Routes: &RouteMemo{}, Memo: &Memo{}}
	for _, c := range []struct {
		name  string
		edit  func()
		sweep bool // the pass walks the routes kept
	}{
		{"first pass", func() {}, false},
		{"three deleted", func() { in.HTTPRoutes = in.HTTPRoutes[3:] }, true},
		{"one a new object", func() { in.HTTPRoutes[0] = benchRoute(3, 2, "/new") }, false},
		{"two new objects", func() { in.HTTPRoutes[1], in.HTTPRoutes[4] = benchRoute(4, 2, "/x"), benchRoute(7, 2, "/x") }, false},
		{"one added", func() { in.HTTPRoutes = append(in.HTTPRoutes, benchRoute(20, 2, "/p")) }, false},
		{"unchanged", func() {}, false},
	} {
		c.edit()
		sweeps := opts.Memo.sweeps
		Compute(in, opts)
		if swept := opts.Memo.sweeps > sweeps; swept != c.sweep {
			t.Errorf("%s: the pass walked the routes kept: %v, want %v", c.name, swept, c.sweep)
		}
		if got := len(opts.Memo.routes); got != len(in.HTTPRoutes) {
			t.Errorf("%s: the memo holds %d routes, the input %d", c.name, got, len(in.HTTPRoutes))
		}
		for _, h := range in.HTTPRoutes {
			if opts.Memo.routes[h] == nil {
				t.Errorf("%s: route %s not held", c.name, h.Name)
			}
		}
	}
}

// TestMemoEntryHolds: a route's entry (kept on the route) is handed back
// in the pass that made it and in the next ones while the Services its
// backendRefs name did not change; not after a pass that did not ask for
// it and saw a Service change (a change then was not looked at), nor in
// another world. (A spliced pass asks for the changed routes' alone:
// splice.go.)
func TestMemoEntryHolds(t *testing.T) {
	r := &route{key: RouteKey{KindHTTPRoute, Key{"apps", "r"}}, refs: []gwv1.BackendRef{{BackendObjectReference: gwv1.BackendObjectReference{Name: "s"}}}}
	for _, tc := range []struct {
		name      string
		gen, pass int  // the entry's
		changed   bool // its Service changed since the last pass
		movedAt   int  // the last pass before this one that saw a Service change
		same      bool
	}{
		{"asked before in this pass", 2, 5, true, 4, true},
		{"the last pass's", 2, 4, false, 4, true},
		{"the last pass's, its Service changed", 2, 4, true, 1, false},
		{"from two passes ago, a Service changed since", 2, 3, false, 4, false},
		{"from two passes ago, no Service changed since", 2, 3, false, 3, true},
		{"another world's", 1, 4, false, 1, false},
	} {
		m := &Memo{on: true, pass: 5, egen: 2, changed: map[Key]bool{}, prevMovedAt: tc.movedAt}
		if tc.changed {
			m.changed[Key{"apps", "s"}] = true
		}
		e := &routeEntry{gen: tc.gen, pass: tc.pass}
		r.e = e
		if got := m.entry(r, nil); (got == e) != tc.same || got.pass != m.pass || got.gen != m.egen {
			t.Errorf("%s: entry handed back %v (pass %d, gen %d), want %v", tc.name, got == e, got.pass, got.gen, tc.same)
		}
	}
}
