package gateway

import (
	"net/netip"
	"runtime"
	"testing"
)

// TestPassAllocatesLittlePerRoute: a pass adding one route among
// thousands allocates less than a few dozen bytes per route: no map of
// every route's status (routestatuses.go) and no array of every route
// made again (the routes' list, the order's ranks, each listener's
// routes, the table update's renumbering: reused). What is left is
// mostly the table's hosts, copied when one comes (40 bytes a route).
func TestPassAllocatesLittlePerRoute(t *testing.T) {
	const n, passes, perRoute = 2000, 10, 64
	in := manyRoutes(n, 2)
	opts := Options{Addresses: []netip.Addr{lbAddr}, Routes: &RouteMemo{}, Memo: &Memo{}}
	Compute(in, opts)
	for i := range 3 { // the reused arrays grown to their size
		in.HTTPRoutes = append(in.HTTPRoutes, benchRoute(n+i, 2, "/p"))
		Compute(in, opts)
	}
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	for i := range passes {
		in.HTTPRoutes = append(in.HTTPRoutes, benchRoute(n+3+i, 2, "/p"))
		Compute(in, opts)
	}
	runtime.ReadMemStats(&after)
	got := (after.TotalAlloc - before.TotalAlloc) / passes
	if got > n*perRoute {
		t.Errorf("a pass adding a route among %d allocated %d bytes: want at most %d (%d a route)", n, got, n*perRoute, perRoute)
	}
	t.Logf("%d bytes a pass, %d a route", got, got/n)
}
