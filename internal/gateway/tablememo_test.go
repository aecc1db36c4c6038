package gateway

import (
	"fmt"
	"math/rand/v2"
	"net/netip"
	"strconv"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	gwv1 "sigs.k8s.io/gateway-api/apis/v1"

	"github.com/haproxy-k8s-sync/haproxy-k8s-sync/internal/model"
)

// tableWorld is a random world for the table memo: one Gateway with two
// HTTP listeners on one port (any host, and *.example.com) and one on
// another, routes mostly of exact hosts (a few shared, some on the
// wildcard listener's domain), now and then a wildcard or no hostname;
// edits change, add and delete routes anywhere in the order, change
// their number of rules (their actions' places move) and their
// Services.
type tableWorld struct {
	routeWorld
	// catchAll: routes r0 to r<catchAll-1> match through a wildcard or
	// any host, the others through exact names.
	catchAll int
	// twice: a route in twice is attached to the any-host listener
	// twice (a parentRef with its section and one without): the table
	// is then built whole.
	twice int
	// shapes: rules match on one of a few sets of headers and a method,
	// and change request and response headers, so that a table's header
	// sets and action names come and go (tableshape.go).
	shapes bool
}

// routeWorld is what the random worlds of routes have in common.
type routeWorld struct {
	rnd     *rand.Rand
	gen     int // the objects' generation
	next    int // the next route's number
	gws     []*gwv1.Gateway
	classes []*gwv1.GatewayClass
	routes  map[string]*gwv1.HTTPRoute
	svcs    []*corev1.Service
}

func newTableWorld(seed uint64, n, catchAll int) *tableWorld {
	w := &tableWorld{routeWorld: routeWorld{rnd: rand.New(rand.NewPCG(seed, 31)), routes: map[string]*gwv1.HTTPRoute{}}, catchAll: catchAll}
	w.classes = []*gwv1.GatewayClass{class("hks", ControllerName)}
	w.gws = []*gwv1.Gateway{gateway("apps", "gw", "hks", 0,
		listenerOf("web", gwv1.HTTPProtocolType, 80, ""), listenerOf("wild", gwv1.HTTPProtocolType, 80, "*.example.com"),
		listenerOf("alt", gwv1.HTTPProtocolType, 8080, "b.example.com"))}
	for i := range 6 {
		s, _ := service("apps", "s"+strconv.Itoa(i), corev1.ProtocolTCP, 80, 8080, "10.244.0.1")
		w.svcs = append(w.svcs, s)
	}
	for range n {
		w.route(w.next)
		w.next++
	}
	return w
}

// route writes route i anew: a new object, its creation time kept.
func (w *tableWorld) route(i int) {
	name := "r" + strconv.Itoa(i)
	r := httpRoute("apps", name, parent("gw", ""))
	if w.twice > 0 && w.rnd.IntN(w.twice) == 0 {
		r.Spec.ParentRefs = append(r.Spec.ParentRefs, parent("gw", "web"))
	}
	r.CreationTimestamp.Time = t0.Add(time.Duration(i/3) * time.Second) // ties broken by name
	w.gen++
	r.Generation = int64(w.gen)
	switch k := w.rnd.IntN(40); {
	case i < w.catchAll && k < 20:
		r.Spec.Hostnames = []gwv1.Hostname{"*.example.com"}
	case i < w.catchAll: // no hostname: any host
	case k < 20:
		r.Spec.Hostnames = []gwv1.Hostname{gwv1.Hostname(fmt.Sprintf("h%d.example.com", w.rnd.IntN(30)))}
	default:
		r.Spec.Hostnames = []gwv1.Hostname{gwv1.Hostname(fmt.Sprintf("h%d.test", w.rnd.IntN(30)))}
		if w.rnd.IntN(4) == 0 {
			r.Spec.Hostnames = append(r.Spec.Hostnames, "b.example.com")
		}
	}
	for range w.rnd.IntN(3) { // none: a route with no rule
		path, exact := "/"+strconv.Itoa(w.rnd.IntN(3)), gwv1.PathMatchExact
		m := gwv1.HTTPRouteMatch{Path: &gwv1.HTTPPathMatch{Value: &path}}
		if w.rnd.IntN(2) == 0 {
			m.Path.Type = &exact
		}
		if w.rnd.IntN(3) == 0 {
			m.Headers = []gwv1.HTTPHeaderMatch{{Name: "X-Env", Value: "v" + strconv.Itoa(w.rnd.IntN(2))}}
		}
		rule := gwv1.HTTPRouteRule{Matches: []gwv1.HTTPRouteMatch{m}}
		if w.rnd.IntN(3) == 0 {
			rule.Matches = append(rule.Matches, gwv1.HTTPRouteMatch{})
		}
		rule.BackendRefs = []gwv1.HTTPBackendRef{{BackendRef: ref("", "s"+strconv.Itoa(w.rnd.IntN(7)), 80, int32(1+w.rnd.IntN(3)))}}
		if w.shapes {
			w.shape(&rule)
		}
		r.Spec.Rules = append(r.Spec.Rules, rule)
	}
	w.routes[name] = r
}

// shape gives rule's first match some of a few headers (or a method) to
// match on, and the rule, at times, header changes of each kind, their
// names from a few: the shapes of the tables (tableshape.go) change.
func (w *tableWorld) shape(rule *gwv1.HTTPRouteRule) {
	name := func() gwv1.HTTPHeaderName { return gwv1.HTTPHeaderName("X-" + strconv.Itoa(w.rnd.IntN(4))) }
	m := &rule.Matches[0]
	m.Headers = nil
	for range w.rnd.IntN(3) {
		m.Headers = append(m.Headers, gwv1.HTTPHeaderMatch{Name: name(), Value: "v"})
	}
	if w.rnd.IntN(4) == 0 {
		get := gwv1.HTTPMethodGet
		m.Method = &get
	}
	mods := func() *gwv1.HTTPHeaderFilter {
		return &gwv1.HTTPHeaderFilter{Set: []gwv1.HTTPHeader{{Name: name(), Value: "1"}}, Remove: []string{"x-r" + strconv.Itoa(w.rnd.IntN(2))}}
	}
	switch w.rnd.IntN(6) {
	case 0:
		rule.Filters = append(rule.Filters, gwv1.HTTPRouteFilter{Type: gwv1.HTTPRouteFilterRequestHeaderModifier, RequestHeaderModifier: mods()})
	case 1:
		rule.Filters = append(rule.Filters, gwv1.HTTPRouteFilter{Type: gwv1.HTTPRouteFilterResponseHeaderModifier, ResponseHeaderModifier: mods()})
	case 2:
		rule.BackendRefs[0].Filters = []gwv1.HTTPRouteFilter{{Type: gwv1.HTTPRouteFilterRequestHeaderModifier, RequestHeaderModifier: mods()}}
	}
}

// edit changes the world at random and says how.
func (w *tableWorld) edit() string {
	switch k := w.rnd.IntN(20); {
	case k < 12:
		i := w.rnd.IntN(w.next)
		w.route(i)
		return "route r" + strconv.Itoa(i)
	case k < 15:
		w.route(w.next)
		w.next++
		return "new route r" + strconv.Itoa(w.next-1)
	case k < 18:
		n := "r" + strconv.Itoa(w.rnd.IntN(w.next))
		delete(w.routes, n)
		return "deleted " + n
	case k < 19:
		i := w.rnd.IntN(len(w.svcs))
		s, _ := service("apps", "s"+strconv.Itoa(i), corev1.ProtocolTCP, 80, 8080, "10.244.0.1")
		w.svcs[i] = s
		return "service s" + strconv.Itoa(i)
	}
	return "nothing"
}

func (w *tableWorld) input() Input {
	in := Input{Classes: w.classes, Gateways: w.gws, Services: w.svcs}
	for _, r := range w.routes {
		in.HTTPRoutes = append(in.HTTPRoutes, r)
	}
	return in
}

// TestTableMemoIsTheWholeTable: over random sequences of changes, the
// HTTP tables a memo keeps between passes (tablememo.go) are the ones a
// pass computing everything builds; and where catch-all routes are few
// and old, at least half of them are built from the last table (a
// route deleted or given another number of rules moves every younger
// route's actions: their hosts are built again, whole past a quarter).
func TestTableMemoIsTheWholeTable(t *testing.T) {
	for _, tc := range []struct {
		name                   string
		seed                   uint64
		routes, catchAll, step int
		kept                   bool // tables built from the last one at least as often as whole
		twice                  int  // a route in twice attached twice to a listener (tableWorld)
		shapes                 bool // header sets and names coming and going (tableWorld)
	}{
		{"small", 1, 20, 2, 300, true, 0, false},
		{"larger", 2, 200, 3, 120, true, 0, false},
		{"no catch-all", 3, 120, 0, 200, true, 0, false},
		{"catch-alls anywhere", 4, 60, 60, 200, false, 0, false},
		{"routes on a listener twice", 6, 60, 0, 200, false, 8, false},
		{"header sets and names", 7, 40, 2, 300, true, 0, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			w := newTableWorld(tc.seed, tc.routes, tc.catchAll)
			w.twice, w.shapes = tc.twice, tc.shapes
			memo := &Memo{}
			withMemo := Options{Addresses: []netip.Addr{lbAddr}, Routes: &RouteMemo{}, Memo: memo}
			whole := Options{Addresses: []netip.Addr{lbAddr}, Routes: &RouteMemo{}}
			var last Result
			var lastActs [][]model.HTTPAction
			for step := range tc.step {
				what := "start"
				if step > 0 {
					what = w.edit()
				}
				in := w.input()
				got, want := Compute(in, withMemo), Compute(in, whole)
				if d := firstDiff(got, want); d != "" {
					t.Fatalf("step %d (%s): the kept table differs from the whole one: %s", step, what, d)
				}
				checkTablesKept(t, step, last, lastActs) // tableactions_test.go
				last, lastActs = got, tablesActions(got)
			}
			if tc.kept && memo.TablesIncremental < memo.TablesWhole {
				t.Errorf("%d tables built from the last one, %d whole: want at least as many from the last one", memo.TablesIncremental, memo.TablesWhole)
			}
			t.Logf("%d tables built from the last one, %d whole", memo.TablesIncremental, memo.TablesWhole)
		})
	}
}

// FuzzTableMemo: from any seed, a world of routes changed step by step
// gets from the kept tables what a whole pass builds.
func FuzzTableMemo(f *testing.F) {
	f.Add(uint64(1), uint8(20), uint8(2))
	f.Add(uint64(7), uint8(40), uint8(0))
	f.Add(uint64(9), uint8(5), uint8(5))
	f.Fuzz(func(t *testing.T, seed uint64, routes, catchAll uint8) {
		w := newTableWorld(seed, 1+int(routes%40), int(catchAll%8))
		withMemo := Options{Addresses: []netip.Addr{lbAddr}, Routes: &RouteMemo{}, Memo: &Memo{}}
		whole := Options{Addresses: []netip.Addr{lbAddr}, Routes: &RouteMemo{}}
		for step := range 30 {
			what := "start"
			if step > 0 {
				what = w.edit()
			}
			in := w.input()
			if d := firstDiff(Compute(in, withMemo), Compute(in, whole)); d != "" {
				t.Fatalf("step %d (%s): the kept table differs from the whole one: %s", step, what, d)
			}
		}
	})
}

// A route deleted, or given more actions, moves the actions of every
// younger route: their hosts keep their rules, renumbered, and the
// table is built from the last one, not whole, and is the whole one.
func TestTableMemoKeepsMovedRoutes(t *testing.T) {
	for _, tc := range []struct {
		name string
		edit func(w *tableWorld)
	}{
		{"an old route deleted", func(w *tableWorld) { delete(w.routes, "r3") }},
		{"an old route given another rule", func(w *tableWorld) {
			r := w.routes["r4"].DeepCopy()
			r.Spec.Rules = append(r.Spec.Rules, r.Spec.Rules...)
			r.Spec.Rules = append(r.Spec.Rules, gwv1.HTTPRouteRule{BackendRefs: []gwv1.HTTPBackendRef{{BackendRef: ref("", "s1", 80, 1)}}})
			w.routes["r4"] = r
		}},
		{"a route between old ones", func(w *tableWorld) {
			w.route(w.next)
			w.routes["r"+strconv.Itoa(w.next)].CreationTimestamp.Time = t0.Add(-time.Second) // the oldest
			w.next++
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			w := newTableWorld(5, 100, 0)
			memo := &Memo{}
			withMemo := Options{Addresses: []netip.Addr{lbAddr}, Routes: &RouteMemo{}, Memo: memo}
			whole := Options{Addresses: []netip.Addr{lbAddr}, Routes: &RouteMemo{}}
			Compute(w.input(), withMemo)
			before := memo.TablesWhole
			tc.edit(w)
			in := w.input()
			if d := firstDiff(Compute(in, withMemo), Compute(in, whole)); d != "" {
				t.Fatalf("the kept table differs from the whole one: %s", d)
			}
			if memo.TablesWhole != before {
				t.Errorf("%d tables built whole after the change: want every one built from the last", memo.TablesWhole-before)
			}
		})
	}
}

// An HTTPRoute's status written (a new object, its spec the same) keeps
// its compiled rules and its place: at the start every route's status
// is written, and the pass that saw those objects, and the next change,
// built the table whole (more than a quarter of the routes new). A
// sequence as BenchmarkHTTPRoutePropagation's: after the first pass
// none builds the table whole, and each is the whole computation's.
func TestTableMemoKeepsRoutesAcrossStatusWrites(t *testing.T) {
	w := newTableWorld(7, 100, 0)
	memo := &Memo{}
	withMemo := Options{Addresses: []netip.Addr{lbAddr}, Routes: &RouteMemo{}, Memo: memo}
	whole := Options{Addresses: []netip.Addr{lbAddr}, Routes: &RouteMemo{}}
	statuses := func(names ...string) {
		for _, n := range names {
			r := w.routes[n].DeepCopy()
			r.Status.Parents = []gwv1.RouteParentStatus{{ControllerName: ControllerName, ParentRef: parent("gw", "")}}
			w.routes[n] = r
		}
	}
	all := func() []string {
		var ns []string
		for n := range w.routes {
			ns = append(ns, n)
		}
		return ns
	}
	for i, step := range []struct {
		what string
		edit func()
	}{
		{"start", func() {}},
		{"every route's status", func() { statuses(all()...) }},
		{"a new route", func() { w.route(w.next); w.next++ }},
		{"its status", func() { statuses("r" + strconv.Itoa(w.next-1)) }},
		{"a route moved to another Service", func() {
			r := w.routes["r5"].DeepCopy()
			r.Generation++
			r.Spec.Rules = []gwv1.HTTPRouteRule{{BackendRefs: []gwv1.HTTPBackendRef{{BackendRef: ref("", "s5", 80, 1)}}}}
			w.routes["r5"] = r
		}},
		{"its status", func() { statuses("r5") }},
		{"a route's hostnames", func() {
			r := w.routes["r9"].DeepCopy()
			r.Generation++
			r.Spec.Hostnames = []gwv1.Hostname{"other.test"}
			w.routes["r9"] = r
		}},
		{"every route's status again", func() { statuses(all()...) }},
	} {
		step.edit()
		before := memo.TablesWhole
		in := w.input()
		if d := firstDiff(Compute(in, withMemo), Compute(in, whole)); d != "" {
			t.Fatalf("%s: the kept table differs from the whole one: %s", step.what, d)
		}
		if got := memo.TablesWhole - before; i > 0 && got != 0 {
			t.Errorf("%s: %d tables built whole, want 0", step.what, got)
		}
	}
}
