package gateway

import (
	"net/netip"
	"slices"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	gwv1 "sigs.k8s.io/gateway-api/apis/v1"

	"github.com/haproxy-k8s-sync/haproxy-k8s-sync/internal/pools"
)

// TestOthersAllocatedWithGateways: a request of an object served beside
// the Gateways (an IngressClass naming a pool) is allocated among the
// Gateways and the Services' reservations in age order, its claimed
// addresses apart from those being claimed, a problem when it has none.
func TestOthersAllocatedWithGateways(t *testing.T) {
	a := netip.MustParseAddr
	tcp := func(name string, age int) *gwv1.Gateway {
		return gateway("apps", name, "hks", age, listenerOf("tcp", gwv1.TCPProtocolType, 443, ""))
	}
	other := func(age int, cur ...netip.Addr) pools.Request {
		return pools.Request{Key: pools.IngressClassKey("ing"), Pool: "p", Families: []int{4}, Ports: []pools.Port{{Protocol: "TCP", Port: 80}},
			Created: t0.Add(time.Duration(age) * time.Second), Current: cur}
	}
	for _, tc := range []struct {
		name    string
		pool    string
		gws     []*gwv1.Gateway
		svcs    []*corev1.Service
		other   pools.Request
		claims  pools.Claims
		addrs   []netip.Addr
		pending []netip.Addr
		problem string
		gwAddr  string // Gateway a's address
	}{
		{name: "older than the Gateway: the first address", pool: "198.18.0.0/30", gws: []*gwv1.Gateway{tcp("a", 2)}, other: other(1),
			addrs: []netip.Addr{a("198.18.0.0")}, gwAddr: "198.18.0.1"},
		{name: "younger: the next", pool: "198.18.0.0/30", gws: []*gwv1.Gateway{tcp("a", 1)}, other: other(2),
			addrs: []netip.Addr{a("198.18.0.1")}, gwAddr: "198.18.0.0"},
		{name: "not a Service's", pool: "198.18.0.0/30", svcs: []*corev1.Service{lbService("web", 5, "198.18.0.0", nil)}, other: other(1),
			addrs: []netip.Addr{a("198.18.0.1")}},
		{name: "kept from the last pass", pool: "198.18.0.0/30", gws: []*gwv1.Gateway{tcp("a", 1)}, other: other(2, a("198.18.0.3")),
			addrs: []netip.Addr{a("198.18.0.3")}, gwAddr: "198.18.0.0"},
		{name: "exhausted", pool: "198.18.0.0/32", gws: []*gwv1.Gateway{tcp("a", 1)}, other: other(2),
			problem: pools.ReasonExhausted, gwAddr: "198.18.0.0"},
		{name: "no such pool", pool: "198.18.0.0/30", other: func() pools.Request { r := other(1); r.Pool = "missing"; return r }(),
			problem: pools.ReasonNoPool},
		{name: "claims made: pending until claimed", pool: "198.18.0.0/30", other: other(1), claims: pools.Claims{},
			pending: []netip.Addr{a("198.18.0.0")}},
		{name: "claims made: claimed for it", pool: "198.18.0.0/30", other: other(1),
			claims: pools.Claims{a("198.18.0.2"): {Key: "IngressClass ing"}}, addrs: []netip.Addr{a("198.18.0.2")}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			in := Input{Classes: []*gwv1.GatewayClass{class("hks", ControllerName)}, Gateways: tc.gws, Services: tc.svcs}
			res := Compute(in, Options{Pooled: true, Pools: []pools.Pool{testPool(t, "p", tc.pool)}, Claims: tc.claims, Others: []pools.Request{tc.other}})
			g, ok := res.Others[tc.other.Key]
			if !ok {
				t.Fatalf("no result for %s: %v", tc.other.Key, res.Others)
			}
			if !slices.Equal(g.Addrs, tc.addrs) || !slices.Equal(g.Pending, tc.pending) {
				t.Errorf("got %v pending %v, want %v pending %v", g.Addrs, g.Pending, tc.addrs, tc.pending)
			}
			if (tc.problem == "") != (len(g.Problems) == 0) || (tc.problem != "" && g.Problems[0].Reason != tc.problem) {
				t.Errorf("problems %+v, want %q", g.Problems, tc.problem)
			}
			if tc.gwAddr != "" {
				st := res.Gateways[Key{"apps", "a"}]
				if len(st.Addresses) != 1 || st.Addresses[0].Value != tc.gwAddr {
					t.Errorf("Gateway a: %+v, want %s", st.Addresses, tc.gwAddr)
				}
			}
		})
	}
}
