package gateway

import (
	"fmt"
	"maps"
	"math/rand/v2"
	"net/netip"
	"reflect"
	"slices"
	"strconv"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	gwv1 "sigs.k8s.io/gateway-api/apis/v1"
	gwv1beta1 "sigs.k8s.io/gateway-api/apis/v1beta1"

	"github.com/haproxy-k8s-sync/haproxy-k8s-sync/internal/desired"
	"github.com/haproxy-k8s-sync/haproxy-k8s-sync/internal/model"
)

// memoWorld is a small random Gateway world for the memo's test: two
// Gateways with HTTP listeners, routes in two namespaces naming Services
// of both (some missing, some across namespaces without a grant), and
// edits to any of them.
type memoWorld struct {
	rnd      *rand.Rand
	gen      int
	classes  []*gwv1.GatewayClass
	gateways []*gwv1.Gateway
	routes   map[string]*gwv1.HTTPRoute
	services map[string]*corev1.Service
	slices   map[string]*desired.Slice
	grants   []*gwv1beta1.ReferenceGrant
	lb       []netip.Addr // the load balancer's addresses (Options.Addresses)
}

var (
	memoNS    = []string{"apps", "other"}
	memoHosts = []string{"", "a.example.com", "*.example.com", "b.example.com", "c.test", "*.test"}
)

func newMemoWorld(seed uint64) *memoWorld {
	m := &memoWorld{rnd: rand.New(rand.NewPCG(seed, 30)), routes: map[string]*gwv1.HTTPRoute{},
		services: map[string]*corev1.Service{}, slices: map[string]*desired.Slice{}}
	m.classes = []*gwv1.GatewayClass{class("hks", ControllerName)}
	m.gateways = []*gwv1.Gateway{
		gateway("apps", "gw", "hks", 0, listenerOf("web", gwv1.HTTPProtocolType, 80, ""), listenerOf("wild", gwv1.HTTPProtocolType, 8080, "*.example.com")),
		gateway("other", "gw2", "hks", 1, listenerOf("web", gwv1.HTTPProtocolType, 8081, "")),
	}
	// gw2 binds lbAddr: while the load balancer does not have it, gw2's
	// routes are Pending and not served, with no object changed.
	m.gateways[1].Spec.Addresses = []gwv1.GatewaySpecAddress{{Value: lbAddr.String()}}
	m.lb = []netip.Addr{lbAddr}
	for _, g := range m.gateways {
		all := gwv1.NamespacesFromAll
		for i := range g.Spec.Listeners {
			g.Spec.Listeners[i].AllowedRoutes = &gwv1.AllowedRoutes{Namespaces: &gwv1.RouteNamespaces{From: &all}}
		}
	}
	for i := range 8 {
		m.editService(i)
	}
	for i := range 30 {
		m.editRoute(i)
	}
	return m
}

func (m *memoWorld) editService(i int) {
	ns, name := memoNS[i%2], "s"+strconv.Itoa(i)
	m.gen++
	s, sl := service(ns, name, corev1.ProtocolTCP, int32(80+m.rnd.IntN(2)), 8080, fmt.Sprintf("10.244.%d.%d", i, m.gen%250+1))
	m.services[ns+"/"+name], m.slices[ns+"/"+name] = s, sl
}

func (m *memoWorld) editRoute(i int) {
	ns := memoNS[m.rnd.IntN(2)]
	r := httpRoute(ns, "r"+strconv.Itoa(i), parent("gw", ""))
	r.Namespace = ns
	r.CreationTimestamp.Time = t0.Add(time.Duration(m.rnd.IntN(5)) * time.Second)
	r.Generation = int64(m.gen)
	m.gen++
	if m.rnd.IntN(2) == 0 {
		ns := gwv1.Namespace("other")
		r.Spec.ParentRefs = append(r.Spec.ParentRefs, gwv1.ParentReference{Name: "gw2", Namespace: &ns})
	}
	for range m.rnd.IntN(3) {
		if h := memoHosts[m.rnd.IntN(len(memoHosts))]; h != "" {
			r.Spec.Hostnames = append(r.Spec.Hostnames, gwv1.Hostname(h))
		}
	}
	for range 1 + m.rnd.IntN(2) {
		var rule gwv1.HTTPRouteRule
		path, exact := "/"+strconv.Itoa(m.rnd.IntN(4)), gwv1.PathMatchExact
		match := gwv1.HTTPRouteMatch{Path: &gwv1.HTTPPathMatch{Value: &path}}
		if m.rnd.IntN(2) == 0 {
			match.Path.Type = &exact
		}
		if m.rnd.IntN(3) == 0 {
			v := "v1"
			if m.rnd.IntN(6) == 0 {
				v = "bad value" // refused: the route is not served
			}
			match.Headers = []gwv1.HTTPHeaderMatch{{Name: "X-Env", Value: v}}
		}
		rule.Matches = []gwv1.HTTPRouteMatch{match}
		if m.rnd.IntN(8) == 0 {
			code := 301
			rule.Filters = []gwv1.HTTPRouteFilter{{Type: gwv1.HTTPRouteFilterRequestRedirect, RequestRedirect: &gwv1.HTTPRequestRedirectFilter{StatusCode: &code}}}
		}
		for range 1 + m.rnd.IntN(2) {
			j := m.rnd.IntN(10) // s8 and s9 are never Services
			svcNS := ""
			if m.rnd.IntN(4) == 0 {
				svcNS = memoNS[m.rnd.IntN(2)]
			}
			rule.BackendRefs = append(rule.BackendRefs, gwv1.HTTPBackendRef{BackendRef: ref(svcNS, "s"+strconv.Itoa(j), int32(80+m.rnd.IntN(2)), int32(m.rnd.IntN(3)))})
		}
		r.Spec.Rules = append(r.Spec.Rules, rule)
	}
	m.routes[ns+"/"+r.Name] = r
	if o := memoNS[1-memoNSIndex(ns)] + "/" + r.Name; m.routes[o] != nil {
		delete(m.routes, o) // one route of a name
	}
}

func memoNSIndex(ns string) int {
	if ns == "apps" {
		return 0
	}
	return 1
}

// edit changes one thing at random, or nothing (a resync).
func (m *memoWorld) edit() string {
	switch k := m.rnd.IntN(13); k {
	case 0, 1, 2:
		i := m.rnd.IntN(34)
		m.editRoute(i)
		return "route r" + strconv.Itoa(i)
	case 3:
		if len(m.routes) > 0 { // one of them by the seed (not by the map's order: the test is the same each run)
			k := slices.Sorted(maps.Keys(m.routes))[m.rnd.IntN(len(m.routes))]
			delete(m.routes, k)
			return "deleted route " + k
		}
	case 4:
		i := m.rnd.IntN(8)
		m.editService(i)
		return "service s" + strconv.Itoa(i)
	case 5:
		i := m.rnd.IntN(8)
		k := memoNS[i%2] + "/s" + strconv.Itoa(i)
		_, sl := service(memoNS[i%2], "s"+strconv.Itoa(i), corev1.ProtocolTCP, 80, 8080, fmt.Sprintf("10.245.0.%d", m.rnd.IntN(250)+1))
		m.slices[k] = sl
		return "endpoints of " + k
	case 6:
		if len(m.grants) > 0 {
			m.grants = nil
			return "grants deleted"
		}
		m.grants = []*gwv1beta1.ReferenceGrant{grant("other", "apps", KindHTTPRoute, ""), grant("apps", "other", KindHTTPRoute, "s2")}
		return "grants added"
	case 7:
		if m.rnd.IntN(2) == 0 { // a listener's hostname (its generation as it was: the spec is compared)
			g := m.gateways[0].DeepCopy()
			h := gwv1.Hostname("*.test")
			if l := &g.Spec.Listeners[1]; l.Hostname != nil && *l.Hostname == h {
				h = "*.example.com"
			}
			g.Spec.Listeners[1].Hostname = &h
			m.gateways[0] = g
			return "gateway gw's hostname " + string(h)
		}
		g := m.gateways[1].DeepCopy()
		if len(g.Spec.Listeners) == 1 {
			g.Spec.Listeners = append(g.Spec.Listeners, g.Spec.Listeners[0])
			g.Spec.Listeners[1].Name, g.Spec.Listeners[1].Port = "more", 8082
			h := gwv1.Hostname("b.example.com")
			g.Spec.Listeners[1].Hostname = &h
		} else {
			g.Spec.Listeners = g.Spec.Listeners[:1]
		}
		m.gateways[1] = g
		return "gateway gw2"
	case 8:
		if len(m.lb) == 1 {
			m.lb = []netip.Addr{lbAddr, netip.MustParseAddr("127.0.0.2")}
			return "load balancer addresses added"
		}
		if m.lb[0] == lbAddr {
			m.lb = []netip.Addr{netip.MustParseAddr("127.0.0.2")}
			return "load balancer address of gw2 gone"
		}
		m.lb = []netip.Addr{lbAddr}
		return "load balancer address of gw2 back"
	case 9, 10: // our status written: a new object, its status only (or the addresses a pass reads)
		i := m.rnd.IntN(len(m.gateways))
		g := m.gateways[i].DeepCopy()
		g.Status.Listeners = append(g.Status.Listeners, gwv1.ListenerStatus{Name: "web", AttachedRoutes: int32(m.gen)})
		m.gen++
		if k == 10 {
			g.Status.Addresses = append(g.Status.Addresses, gwv1.GatewayStatusAddress{Value: "127.0.0." + strconv.Itoa(m.rnd.IntN(3)+1)})
		}
		m.gateways[i] = g
		return "status of gateway " + g.Name
	}
	return "nothing"
}

// input is the world in a random order, as the informers list it.
func (m *memoWorld) input() Input {
	in := Input{Classes: m.classes, Gateways: m.gateways, Grants: m.grants}
	for _, r := range m.routes {
		in.HTTPRoutes = append(in.HTTPRoutes, r)
	}
	for k, s := range m.services {
		in.Services = append(in.Services, s)
		in.Slices = append(in.Slices, m.slices[k])
	}
	m.rnd.Shuffle(len(in.HTTPRoutes), func(i, j int) { in.HTTPRoutes[i], in.HTTPRoutes[j] = in.HTTPRoutes[j], in.HTTPRoutes[i] })
	m.rnd.Shuffle(len(in.Slices), func(i, j int) { in.Slices[i], in.Slices[j] = in.Slices[j], in.Slices[i] })
	return in
}

// TestMemoIsTheWholeCompute: over random edits, a pass with the
// per-route memo gives what a pass computing every route gives, and the
// memo is used (most routes are not compiled again).
func TestMemoIsTheWholeCompute(t *testing.T) {
	for seed := range uint64(3) {
		m := newMemoWorld(seed)
		memo := &Memo{}
		withMemo := Options{Routes: &RouteMemo{}, Memo: memo}
		whole := Options{Routes: &RouteMemo{}}
		var last RouteStatuses // the last pass's statuses, and a copy of them
		var lastCopy map[RouteKey][]gwv1.RouteParentStatus
		for step := range 100 {
			what := "start"
			if step > 0 {
				what = m.edit()
			}
			withMemo.Addresses, whole.Addresses = m.lb, m.lb
			in := m.input()
			got, want := Compute(in, withMemo), Compute(in, whole)
			if d := firstDiff(got, want); d != "" {
				t.Fatalf("seed %d step %d (%s): the memo's pass differs from the whole one: %s", seed, step, what, d)
			}
			if step > 0 && !reflect.DeepEqual(last.Map(), lastCopy) { // routestatuses.go: a result never changes
				t.Fatalf("seed %d step %d (%s): the last pass's route statuses changed", seed, step, what)
			}
			last, lastCopy = got.Routes, got.Routes.Map()
		}
		// A spliced pass (splice.go) leaves the unchanged routes as they
		// were: neither compiled nor attached again.
		if memo.Reused+memo.SpliceKept < 2*memo.Compiled {
			t.Errorf("seed %d: the memo reused %d routes' rules (and left %d untouched) and compiled %d: want most reused", seed, memo.Reused, memo.SpliceKept, memo.Compiled)
		}
		if memo.AttachReused+memo.SpliceKept < 30*20 {
			t.Errorf("seed %d: %d attachments replayed (and %d left untouched) over 100 passes of ~30 routes: want most", seed, memo.AttachReused, memo.SpliceKept)
		}
	}
}

// An unchanged route's parents' status is the last pass's very slice
// (the status writer skips it by identity); a changed one is new.
func TestMemoKeepsUnchangedStatus(t *testing.T) {
	m := newMemoWorld(1)
	opts := Options{Addresses: []netip.Addr{lbAddr}, Memo: &Memo{}}
	first := Compute(m.input(), opts)
	for k, r := range m.routes {
		if r.Name == "r3" {
			r = r.DeepCopy() // a new object, as the informer hands out
			r.Spec.Rules[0].Matches[0].Headers = []gwv1.HTTPHeaderMatch{{Name: "X-Env", Value: "bad value " + k}}
			m.routes[k] = r
		}
	}
	second := Compute(m.input(), opts)
	same, changed := 0, 0
	for k, sts := range second.Routes.All() {
		prev, ok := first.Routes.Lookup(k)
		if !ok || len(sts) == 0 {
			continue
		}
		if &prev[0] == &sts[0] {
			same++
		} else if !sameParents(prev, sts) {
			changed++
		} else {
			t.Errorf("%v: status unchanged but a new slice", k)
		}
	}
	if same == 0 || changed == 0 {
		t.Errorf("%d routes kept their status slice and %d changed: want some of each", same, changed)
	}
}

// firstDiff names the first part of two results that differs, with both.
func firstDiff(got, want Result) string {
	got.Pass, got.RoutesChanged = want.Pass, want.RoutesChanged // the memo's alone (routesdelta.go)
	// A table's Shape, kept by the memo (tableshape.go) or computed by a
	// whole build, must be what its hosts and actions give; it is
	// compared so, then left out.
	for _, r := range []*Result{&got, &want} {
		r.Config.Frontends = slices.Clone(r.Config.Frontends)
		for i, f := range r.Config.Frontends {
			if f.HTTP == nil {
				continue
			}
			if f.HTTP.KeptShape() == nil {
				return "frontend " + f.Name + "'s table has no Shape"
			}
			if s := model.ShapeOf(f.HTTP); !f.HTTP.KeptShape().Equal(s) {
				return fmt.Sprintf("frontend %s's table's shape:\nkept:     %+v\nof table: %+v", f.Name, *f.HTTP.KeptShape(), s)
			}
			h := *f.HTTP
			h.SetShape(nil)
			r.Config.Frontends[i].HTTP = &h
		}
	}
	for i := range got.Config.Frontends {
		if i < len(want.Config.Frontends) && !reflect.DeepEqual(got.Config.Frontends[i].HTTP, want.Config.Frontends[i].HTTP) {
			return fmt.Sprintf("frontend %s's table:\nmemo:  %+v\nwhole: %+v", got.Config.Frontends[i].Name, *got.Config.Frontends[i].HTTP, *want.Config.Frontends[i].HTTP)
		}
	}
	for _, p := range []struct {
		name      string
		got, want any
	}{{"frontends", got.Config.Frontends, want.Config.Frontends}, {"backends", got.Config.Backends, want.Config.Backends},
		{"routes' status", got.Routes.Map(), want.Routes.Map()}, {"gateways' status", got.Gateways, want.Gateways}, {"result", got, want}} {
		if !reflect.DeepEqual(p.got, p.want) {
			return fmt.Sprintf("%s:\nmemo:  %+v\nwhole: %+v", p.name, p.got, p.want)
		}
	}
	return ""
}

// A Gateway or GatewayClass whose status alone was written (by us, after
// a pass) is the same world: no route is compiled or attached again; a
// change of a Gateway's labels is another world.
func TestMemoKeepsEntriesAcrossStatusWrites(t *testing.T) {
	m := newMemoWorld(2)
	memo := &Memo{}
	opts := Options{Addresses: m.lb, Routes: &RouteMemo{}, Memo: memo}
	Compute(m.input(), opts)
	for i, g := range m.gateways {
		g = g.DeepCopy()
		g.Status.Listeners = []gwv1.ListenerStatus{{Name: "web", AttachedRoutes: 7}}
		m.gateways[i] = g
	}
	c := m.classes[0].DeepCopy()
	c.Status.Conditions = append(c.Status.Conditions, metav1.Condition{Type: "Accepted", Status: metav1.ConditionTrue})
	m.classes[0] = c
	compiled, attached := memo.Compiled, memo.AttachReused+memo.SpliceKept // replayed, or left as they were by a splice
	got := Compute(m.input(), opts)
	if d := firstDiff(got, Compute(m.input(), Options{Addresses: m.lb, Routes: &RouteMemo{}})); d != "" {
		t.Fatalf("after the status writes the memo's pass differs from the whole one: %s", d)
	}
	if memo.Compiled != compiled || memo.AttachReused+memo.SpliceKept == attached {
		t.Errorf("after status writes alone: %d routes compiled again, %d attachments replayed or kept: want 0 and all", memo.Compiled-compiled, memo.AttachReused+memo.SpliceKept-attached)
	}
	g := m.gateways[0].DeepCopy()
	g.Labels = map[string]string{"a": "b"}
	m.gateways[0] = g
	compiled = memo.Compiled
	Compute(m.input(), opts)
	if memo.Compiled == compiled {
		t.Error("a Gateway's labels changed and no route was compiled again: the world's change was missed")
	}
}

// sameGateway: what a pass reads of a Gateway is its spec and its
// status.addresses (the pools' stickiness), not the rest of its status.
func TestSameGatewayButStatus(t *testing.T) {
	base := gateway("apps", "gw", "hks", 0, listenerOf("web", gwv1.HTTPProtocolType, 80, ""))
	for _, tc := range []struct {
		name string
		edit func(g *gwv1.Gateway)
		same bool
	}{
		{"listeners' status", func(g *gwv1.Gateway) { g.Status.Listeners = []gwv1.ListenerStatus{{Name: "web", AttachedRoutes: 3}} }, true},
		{"conditions", func(g *gwv1.Gateway) { g.Status.Conditions = []metav1.Condition{{Type: "Programmed"}} }, true},
		{"status.addresses", func(g *gwv1.Gateway) { g.Status.Addresses = []gwv1.GatewayStatusAddress{{Value: "192.0.2.1"}} }, false},
		{"a listener's port", func(g *gwv1.Gateway) { g.Spec.Listeners[0].Port = 81 }, false},
		{"labels", func(g *gwv1.Gateway) { g.Labels = map[string]string{"a": "b"} }, false},
		{"generation", func(g *gwv1.Gateway) { g.Generation++ }, false},
	} {
		g := base.DeepCopy()
		tc.edit(g)
		if got := sameMeta(base, g) && sameGateway(base, g); got != tc.same {
			t.Errorf("%s changed: same %v, want %v", tc.name, got, tc.same)
		}
	}
}
