package gateway

import (
	"net/netip"
	"testing"

	gwv1 "sigs.k8s.io/gateway-api/apis/v1"

	"github.com/haproxy-k8s-sync/haproxy-k8s-sync/internal/model"
)

// TestTablePlaceByPlace: a route added after every other, or changed at
// its place with as many actions (up to eight of them), updates its
// table place by place, and the table is the whole computation's; a
// route deleted or added among older ones (the younger places move),
// nine changed, or a changed route matching through any host or a
// wildcard do not; nor does a route added on the first of a port's two
// listeners (the second's actions move).
func TestTablePlaceByPlace(t *testing.T) {
	const n = 200
	changed := func(from, k int) func(in *Input) {
		return func(in *Input) {
			for i := from; i < from+k; i++ {
				in.HTTPRoutes[i] = benchRoute(i, 2, "/g")
			}
		}
	}
	anyHost := func(i int) func(in *Input) {
		return func(in *Input) {
			in.HTTPRoutes[i] = in.HTTPRoutes[i].DeepCopy()
			in.HTTPRoutes[i].Spec.Hostnames = nil
		}
	}
	wildcard := func(i int, path string) func(in *Input) {
		return func(in *Input) {
			in.HTTPRoutes[i] = benchRoute(i, 2, path)
			in.HTTPRoutes[i].Spec.Hostnames = []gwv1.Hostname{"*.example.com"}
		}
	}
	secondListener := func(in *Input) {
		g := in.Gateways[0].DeepCopy()
		g.Spec.Listeners = append(g.Spec.Listeners, listenerOf("other", gwv1.HTTPProtocolType, 80, "*.other.test"))
		in.Gateways[0] = g
		for i := range 10 {
			in.HTTPRoutes[n-1-i] = in.HTTPRoutes[n-1-i].DeepCopy()
			in.HTTPRoutes[n-1-i].Spec.Hostnames = append(in.HTTPRoutes[n-1-i].Spec.Hostnames, "a.other.test")
		}
	}
	for _, tc := range []struct {
		name          string
		start, edit   func(in *Input)
		wantInPlace   bool
		wantKeptAtAll bool // built from the last table, not whole
	}{
		{"the youngest route added", nil, func(in *Input) { in.HTTPRoutes = append(in.HTTPRoutes, benchRoute(n, 2, "/p")) }, true, true},
		{"a route changed at its place", nil, changed(10, 1), true, true},
		{"eight routes changed at their places", nil, changed(10, 8), true, true},
		{"nine routes changed at their places", nil, changed(10, 9), false, true},
		{"an old route deleted", nil, func(in *Input) { in.HTTPRoutes = append(in.HTTPRoutes[:3:3], in.HTTPRoutes[4:]...) }, false, true},
		{"a route added among old ones", nil, func(in *Input) {
			r := benchRoute(n, 2, "/p")
			r.CreationTimestamp = in.HTTPRoutes[5].CreationTimestamp
			in.HTTPRoutes = append(in.HTTPRoutes, r)
		}, false, true},
		{"a route of any host changed", anyHost(0), changed(0, 1), false, false},
		{"a route beside one of any host changed", anyHost(0), changed(50, 1), true, true},
		{"a wildcard route changed", wildcard(1, "/p"), wildcard(1, "/g"), false, false},
		{"a route added on the first of two listeners", secondListener, func(in *Input) {
			r := benchRoute(n, 2, "/p")
			r.CreationTimestamp = in.HTTPRoutes[n-20].CreationTimestamp
			in.HTTPRoutes = append(in.HTTPRoutes, r)
		}, false, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			in := manyRoutes(n, 2)
			if tc.start != nil {
				tc.start(&in)
			}
			memo := &Memo{noSplice: true} // the walk's way (a spliced pass: TestSpliceTakesItsWay)
			withMemo := Options{Addresses: []netip.Addr{lbAddr}, Routes: &RouteMemo{}, Memo: memo}
			whole := Options{Addresses: []netip.Addr{lbAddr}, Routes: &RouteMemo{}}
			Compute(in, withMemo)
			tc.edit(&in)
			whole0 := memo.TablesWhole
			if d := firstDiff(Compute(in, withMemo), Compute(in, whole)); d != "" {
				t.Fatalf("the kept table differs from the whole one: %s", d)
			}
			tm := memo.tables[tableKey{Key{"apps", "gw"}, 80}]
			if tm.inPlace != tc.wantInPlace {
				t.Errorf("updated place by place: %v, want %v", tm.inPlace, tc.wantInPlace)
			}
			if kept := memo.TablesWhole == whole0; kept != tc.wantKeptAtAll {
				t.Errorf("built from the last table: %v, want %v", kept, tc.wantKeptAtAll)
			}
		})
	}
}

// TestLastFragment: the last table's fragment at a place is taken only
// for the same route with the entry it came from, made or checked in
// this pass and of the memo's generation, and the same names.
func TestLastFragment(t *testing.T) {
	f := &fragment{backends: []*model.Backend{{Name: "b"}}}
	for _, tc := range []struct {
		name string
		edit func(a *attachedRoute, was *tableSlot)
		want *fragment
	}{
		{"the same", func(*attachedRoute, *tableSlot) {}, f},
		{"another route", func(a *attachedRoute, _ *tableSlot) { a.r = &route{e: a.r.e} }, nil},
		{"another entry", func(a *attachedRoute, _ *tableSlot) { a.r.e = &routeEntry{gen: 2, pass: 5} }, nil},
		{"no entry", func(a *attachedRoute, was *tableSlot) { a.r.e, was.e = nil, nil }, nil},
		{"an entry of the last pass", func(a *attachedRoute, _ *tableSlot) { a.r.e.pass = 4 }, nil},
		{"an entry of another generation", func(a *attachedRoute, _ *tableSlot) { a.r.e.gen = 1 }, nil},
		{"other names", func(a *attachedRoute, _ *tableSlot) { a.snis = []string{"b.test"} }, nil},
		{"the same names in another slice", func(a *attachedRoute, _ *tableSlot) { a.snis = []string{"a.test"} }, f},
	} {
		t.Run(tc.name, func(t *testing.T) {
			w := &world{memo: &Memo{pass: 5, egen: 2}}
			e := &routeEntry{gen: 2, pass: 5}
			r := &route{e: e}
			a := &attachedRoute{r: r, snis: []string{"a.test"}}
			was := tableSlot{r: r, e: e, f: f, snis: a.snis}
			tc.edit(a, &was)
			backends := map[string]*model.Backend{}
			got := w.lastFragment(a, &was, backends)
			if got != tc.want {
				t.Fatalf("got %p, want %p", got, tc.want)
			}
			if got != nil && backends["b"] != f.backends[0] {
				t.Errorf("its backend not put: %v", backends)
			}
		})
	}
}
