package gateway

import (
	"net/netip"
	"testing"
)

// TestMemoForgetsGoneRoutes: the memo keeps a route only while a pass
// sees its object: one deleted, or replaced by a new object, is
// forgotten at the end of the pass that does not see it.
func TestMemoForgetsGoneRoutes(t *testing.T) {
	in := manyRoutes(10, 2)
	opts := Options{Addresses: []netip.Addr{lbAddr}, Routes: &RouteMemo{}, Memo: &Memo{}}
	for _, c := range []struct {
		name string
		edit func()
	}{
		{"first pass", func() {}},
		{"three deleted", func() { in.HTTPRoutes = in.HTTPRoutes[3:] }},
		{"one a new object", func() { in.HTTPRoutes[0] = benchRoute(3, 2, "/new") }},
		{"one added", func() { in.HTTPRoutes = append(in.HTTPRoutes, benchRoute(20, 2, "/p")) }},
		{"unchanged", func() {}},
	} {
		c.edit()
		Compute(in, opts)
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
