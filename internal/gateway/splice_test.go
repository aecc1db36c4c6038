package gateway

import (
	"fmt"
	"math/rand/v2"
	"net/netip"
	"reflect"
	"strconv"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	gwv1 "sigs.k8s.io/gateway-api/apis/v1"

	"github.com/haproxy-k8s-sync/haproxy-k8s-sync/internal/desired"
	"github.com/haproxy-k8s-sync/haproxy-k8s-sync/internal/model"
)

// spliceWorld is a random world for spliced passes (splice.go): one
// Gateway with an HTTP listener of any host, one of a host name on
// another port, an HTTPS one whose Secret is missing (status only) and
// a TCP one; routes mostly of exact hosts on all three, some on one
// listener, some on one twice, now and then a wildcard, no hostname or
// header changes (the table's shape); edits that a splice takes (a
// route changed at its place, the youngest added or deleted, a status
// written) and edits that it does not (a route added among old ones,
// several at once, a Service changed, a TCPRoute there).
type spliceWorld struct {
	routeWorld // tablememo_test.go
	slices     []*desired.Slice
	tcp        *gwv1.TCPRoute
}

func newSpliceWorld(seed uint64, n int) *spliceWorld {
	w := &spliceWorld{routeWorld: routeWorld{rnd: rand.New(rand.NewPCG(seed, 77)), routes: map[string]*gwv1.HTTPRoute{}}}
	w.classes = []*gwv1.GatewayClass{class("hks", ControllerName)}
	w.gws = []*gwv1.Gateway{gateway("apps", "gw", "hks", 0,
		listenerOf("web", gwv1.HTTPProtocolType, 80, ""), listenerOf("alt", gwv1.HTTPProtocolType, 8080, "b.example.com"),
		httpsListener("secure", 443, secretRef("", "missing")), listenerOf("raw", gwv1.TCPProtocolType, 9000, ""))}
	for i := range 6 {
		w.service(i)
	}
	for range n {
		w.route(w.next, w.next)
		w.next++
	}
	return w
}

func (w *spliceWorld) service(i int) {
	s, sl := service("apps", "s"+strconv.Itoa(i), corev1.ProtocolTCP, 80, 8080, fmt.Sprintf("10.244.0.%d", 1+w.rnd.IntN(200)))
	if i < len(w.svcs) {
		w.svcs[i], w.slices[i] = s, sl
		return
	}
	w.svcs, w.slices = append(w.svcs, s), append(w.slices, sl)
}

// route writes route i anew (a new object), created at second age.
func (w *spliceWorld) route(i, age int) {
	name := "r" + strconv.Itoa(i)
	r := httpRoute("apps", name, parent("gw", ""))
	switch w.rnd.IntN(12) {
	case 0:
		r.Spec.ParentRefs = []gwv1.ParentReference{parent("gw", "web")}
	case 1:
		r.Spec.ParentRefs = append(r.Spec.ParentRefs, parent("gw", "web")) // on web twice
	}
	r.CreationTimestamp.Time = t0.Add(time.Duration(age) * time.Second)
	w.gen++
	r.Generation = int64(w.gen)
	switch k := w.rnd.IntN(30); {
	case k == 0:
		r.Spec.Hostnames = []gwv1.Hostname{"*.example.com"}
	case k == 1: // any host
	case k < 5:
		r.Spec.Hostnames = []gwv1.Hostname{"b.example.com"}
	default:
		r.Spec.Hostnames = []gwv1.Hostname{gwv1.Hostname(fmt.Sprintf("h%d.example.com", w.rnd.IntN(40)))}
	}
	for range w.rnd.IntN(3) {
		path, exact := "/"+strconv.Itoa(w.rnd.IntN(3)), gwv1.PathMatchExact
		rule := gwv1.HTTPRouteRule{Matches: []gwv1.HTTPRouteMatch{{Path: &gwv1.HTTPPathMatch{Type: &exact, Value: &path}}},
			BackendRefs: []gwv1.HTTPBackendRef{{BackendRef: ref("", "s"+strconv.Itoa(w.rnd.IntN(7)), 80, int32(1+w.rnd.IntN(3)))}}}
		if w.rnd.IntN(10) == 0 {
			rule.Filters = []gwv1.HTTPRouteFilter{{Type: gwv1.HTTPRouteFilterRequestHeaderModifier,
				RequestHeaderModifier: &gwv1.HTTPHeaderFilter{Set: []gwv1.HTTPHeader{{Name: gwv1.HTTPHeaderName("X-" + strconv.Itoa(w.rnd.IntN(2))), Value: "1"}}}}}
		}
		r.Spec.Rules = append(r.Spec.Rules, rule)
	}
	w.routes[name] = r
}

// some is a route's name at random.
func (w *spliceWorld) some() string {
	for {
		n := "r" + strconv.Itoa(w.rnd.IntN(w.next))
		if _, ok := w.routes[n]; ok || len(w.routes) == 0 {
			return n
		}
	}
}

// edit changes the world at random and says how.
func (w *spliceWorld) edit() string {
	if w.tcp != nil { // there for a pass
		w.tcp = nil
		return "TCPRoute deleted"
	}
	switch k := w.rnd.IntN(100); {
	case k < 30:
		n := w.some()
		i, _ := strconv.Atoi(n[1:])
		w.route(i, int(w.routes[n].CreationTimestamp.Sub(t0)/time.Second))
		return "changed " + n
	case k < 50:
		w.route(w.next, w.next)
		w.next++
		return "new youngest r" + strconv.Itoa(w.next-1)
	case k < 55:
		w.route(w.next, w.rnd.IntN(w.next))
		w.next++
		return "new among old r" + strconv.Itoa(w.next-1)
	case k < 65:
		n := w.some()
		delete(w.routes, n)
		return "deleted " + n
	case k < 70:
		delete(w.routes, "r"+strconv.Itoa(w.next-1))
		return "deleted the youngest"
	case k < 85:
		n := w.some()
		r := w.routes[n].DeepCopy()
		r.Status.Parents = []gwv1.RouteParentStatus{{ControllerName: gwv1.GatewayController("x" + strconv.Itoa(w.gen))}}
		w.gen++
		w.routes[n] = r
		return "status of " + n
	case k < 90:
		what := "several:"
		for range 2 + w.rnd.IntN(4) {
			what += " " + w.edit()
		}
		return what
	case k < 94:
		i := w.rnd.IntN(len(w.svcs))
		w.service(i)
		return "service s" + strconv.Itoa(i)
	case k < 97:
		w.tcp = tcpRoute("apps", "t", 0, []gwv1.ParentReference{parent("gw", "raw")}, ref("", "s0", 80, 1))
		return "TCPRoute added"
	}
	return "nothing"
}

func (w *spliceWorld) input() Input {
	in := Input{Classes: w.classes, Gateways: w.gws, Services: w.svcs, Slices: w.slices}
	for _, r := range w.routes {
		in.HTTPRoutes = append(in.HTTPRoutes, r)
	}
	if w.tcp != nil {
		in.TCPRoutes = []*gwv1.TCPRoute{w.tcp}
	}
	return in
}

// TestSpliceIsTheWholeCompute: over random sequences of edits, a pass
// with the memo, spliced where it may be (splice.go, tablesplice.go),
// gives what a pass computing everything gives: the model, every
// status, and the routes whose status changed among those it says
// changed (the publisher looks at those alone); the last result is not
// changed by the next pass. Most passes are spliced, and many of their
// tables changed at their places alone.
func TestSpliceIsTheWholeCompute(t *testing.T) {
	for _, tc := range []struct {
		seed          uint64
		routes, steps int
	}{{1, 30, 400}, {2, 200, 300}, {3, 3, 300}} {
		t.Run(strconv.Itoa(int(tc.seed)), func(t *testing.T) {
			w := newSpliceWorld(tc.seed, tc.routes)
			memo := &Memo{}
			withMemo := Options{Addresses: []netip.Addr{lbAddr}, Routes: &RouteMemo{}, Memo: memo}
			whole := Options{Addresses: []netip.Addr{lbAddr}, Routes: &RouteMemo{}}
			var last Result
			var lastStatus map[RouteKey][]gwv1.RouteParentStatus
			var lastActs [][]model.HTTPAction
			for step := range tc.steps {
				what := "start"
				if step > 0 {
					what = w.edit()
				}
				in := w.input()
				spliced := memo.Spliced
				got, want := Compute(in, withMemo), Compute(in, whole)
				if d := firstDiff(got, want); d != "" {
					t.Fatalf("step %d (%s, spliced %v): the memo's pass differs from the whole one: %s", step, what, memo.Spliced > spliced, d)
				}
				if step > 0 {
					if !reflect.DeepEqual(last.Routes.Map(), lastStatus) {
						t.Fatalf("step %d (%s): the last pass's statuses changed", step, what)
					}
					checkTablesKept(t, step, last, lastActs) // tableactions_test.go
					said := map[RouteKey]bool{}
					for _, k := range got.RoutesChanged {
						said[k] = true
					}
					now := got.Routes.Map()
					for k, sts := range now {
						if prev, ok := lastStatus[k]; (!ok || !sameParents(prev, sts)) && !said[k] {
							t.Fatalf("step %d (%s): %v's status changed and the pass does not say so", step, what, k)
						}
					}
					for k := range lastStatus {
						if _, ok := now[k]; !ok && !said[k] {
							t.Fatalf("step %d (%s): %v's status went and the pass does not say so", step, what, k)
						}
					}
				}
				last, lastStatus, lastActs = got, got.Routes.Map(), tablesActions(got)
			}
			t.Logf("%d of %d passes spliced, %d tables spliced, %d whole, %d from the last one", memo.Spliced, tc.steps, memo.TablesSpliced, memo.TablesWhole, memo.TablesIncremental)
			if memo.Spliced < tc.steps/2 || memo.TablesSpliced < tc.steps/4 {
				t.Errorf("%d passes spliced, %d tables spliced in %d passes: want most passes, many tables", memo.Spliced, memo.TablesSpliced, tc.steps)
			}
		})
	}
}

// TestSpliceTakesItsWay: at 2,000 routes, a new youngest route, a route
// changed at its place and a status written are spliced passes whose
// table is changed at its places alone, a route added among old ones
// a spliced pass whose table is walked, and a Service changed a pass
// that attaches every route; each says the statuses of a few routes
// may have changed, not every route's (a route's status noted in a
// spliced pass, or left as it was, is still the last result's).
func TestSpliceTakesItsWay(t *testing.T) {
	const n = 2000
	in := manyRoutes(n, 2)
	memo := &Memo{}
	withMemo := Options{Addresses: []netip.Addr{lbAddr}, Routes: &RouteMemo{}, Memo: memo}
	whole := Options{Addresses: []netip.Addr{lbAddr}, Routes: &RouteMemo{}}
	Compute(in, withMemo)
	for _, tc := range []struct {
		name                 string
		edit                 func(in *Input)
		spliced, tableSplice bool
	}{
		{"a new youngest route", func(in *Input) { in.HTTPRoutes = append(in.HTTPRoutes, benchRoute(n, 2, "/p")) }, true, true},
		{"a route changed at its place", func(in *Input) { in.HTTPRoutes[7] = benchRoute(7, 2, "/g") }, true, true},
		{"a status written", func(in *Input) {
			r := *in.HTTPRoutes[9]
			r.Status.Parents = []gwv1.RouteParentStatus{{ControllerName: "x"}}
			in.HTTPRoutes[9] = &r
		}, true, true},
		{"the youngest deleted", func(in *Input) { in.HTTPRoutes = in.HTTPRoutes[:len(in.HTTPRoutes)-1] }, true, true},
		{"a route added among old ones", func(in *Input) {
			r := benchRoute(n+1, 2, "/p")
			r.CreationTimestamp = in.HTTPRoutes[5].CreationTimestamp
			in.HTTPRoutes = append(in.HTTPRoutes, r)
		}, true, false},
		{"a Service changed", func(in *Input) {
			s, sl := service("apps", "s1", corev1.ProtocolTCP, 80, 8080, "10.244.9.9")
			in.Services[1], in.Slices[1] = s, sl
		}, false, false},
	} {
		tc.edit(&in)
		spliced, tables := memo.Spliced, memo.TablesSpliced
		res := Compute(in, withMemo)
		if d := firstDiff(res, Compute(in, whole)); d != "" {
			t.Fatalf("%s: the memo's pass differs from the whole one: %s", tc.name, d)
		}
		if len(res.RoutesChanged) > 2 {
			t.Errorf("%s: %d routes' status said changed, want at most 2", tc.name, len(res.RoutesChanged))
		}
		if got := memo.Spliced > spliced; got != tc.spliced {
			t.Errorf("%s: spliced %v, want %v", tc.name, got, tc.spliced)
		}
		if got := memo.TablesSpliced > tables; got != tc.tableSplice {
			t.Errorf("%s: table spliced %v, want %v", tc.name, got, tc.tableSplice)
		}
	}
}
