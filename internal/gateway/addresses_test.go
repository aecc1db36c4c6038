package gateway

import (
	"net/netip"
	"slices"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	gwv1 "sigs.k8s.io/gateway-api/apis/v1"

	"github.com/haproxy-k8s-sync/haproxy-k8s-sync/internal/desired"
	"github.com/haproxy-k8s-sync/haproxy-k8s-sync/internal/pools"
)

func testPool(t *testing.T, name string, ranges ...string) pools.Pool {
	t.Helper()
	p := pools.Pool{Name: name, AutoAssign: true}
	for _, r := range ranges {
		rg, err := pools.ParseRange(r)
		if err != nil {
			t.Fatal(err)
		}
		p.Ranges = append(p.Ranges, rg)
	}
	return p
}

func asking(g *gwv1.Gateway, typ gwv1.AddressType, values ...string) *gwv1.Gateway {
	for _, v := range values {
		g.Spec.Addresses = append(g.Spec.Addresses, gwv1.GatewaySpecAddress{Type: &typ, Value: v})
	}
	return g
}

func holding(g *gwv1.Gateway, values ...string) *gwv1.Gateway {
	ip := gwv1.IPAddressType
	for _, v := range values {
		g.Status.Addresses = append(g.Status.Addresses, gwv1.GatewayStatusAddress{Type: &ip, Value: v})
	}
	return g
}

// lbService is a LoadBalancer Service whose status lists ip.
func lbService(name string, age int, ip string, ann map[string]string) *corev1.Service {
	s := &corev1.Service{ObjectMeta: meta("apps", name, age), Spec: corev1.ServiceSpec{Type: corev1.ServiceTypeLoadBalancer,
		Ports: []corev1.ServicePort{{Name: "p", Protocol: corev1.ProtocolTCP, Port: 443}}}}
	s.Annotations = ann
	s.Status.LoadBalancer.Ingress = []corev1.LoadBalancerIngress{{IP: ip}}
	return s
}

func TestGatewayAddressesFromPools(t *testing.T) {
	tcp := func(name string, age int) *gwv1.Gateway {
		return gateway("apps", name, "hks", age, listenerOf("tcp", gwv1.TCPProtocolType, 443, ""))
	}
	shared := map[string]string{pools.SharedIPAnnotation: "k"}
	cases := []struct {
		name     string
		pool     []string
		gws      []*gwv1.Gateway
		svcs     []*corev1.Service
		want     map[string]string // gateway: addresses, or "Accepted/Programmed" reasons when not served
		fronts   int
		wantText string // in the message of the first Gateway's Programmed condition
		prev     map[Key][]netip.Addr
		claims   pools.Claims // address claims made (nil: none)
	}{
		{name: "the last pass's address stays until the status lists it", pool: []string{"198.18.0.0/30"}, gws: []*gwv1.Gateway{tcp("b", 2), tcp("a", 1)},
			prev: map[Key][]netip.Addr{{"apps", "b"}: {netip.MustParseAddr("198.18.0.0")}}, want: map[string]string{"a": "198.18.0.1", "b": "198.18.0.0"}, fronts: 2},
		{name: "its pool gone, a Gateway keeps the address its status lists", pool: []string{"198.18.0.0/30"}, gws: []*gwv1.Gateway{holding(tcp("a", 1), "203.0.113.5"), tcp("b", 2)},
			want: map[string]string{"a": "203.0.113.5", "b": "198.18.0.0"}, fronts: 2},
		{name: "first free address", pool: []string{"198.18.0.0/30"}, gws: []*gwv1.Gateway{tcp("a", 1), tcp("b", 2)},
			want: map[string]string{"a": "198.18.0.0", "b": "198.18.0.1"}, fronts: 2},
		{name: "a Service's address is not handed out", pool: []string{"198.18.0.0/30"}, gws: []*gwv1.Gateway{tcp("a", 1)},
			svcs: []*corev1.Service{lbService("web", 0, "198.18.0.0", nil)}, want: map[string]string{"a": "198.18.0.1"}, fronts: 1},
		{name: "an address an older Service asks for is not handed out", pool: []string{"198.18.0.0/30"}, gws: []*gwv1.Gateway{tcp("a", 1)},
			svcs: []*corev1.Service{func() *corev1.Service {
				s := lbService("web", 0, "", map[string]string{pools.IPsAnnotation: "198.18.0.0"})
				s.Status = corev1.ServiceStatus{}
				return s
			}()}, want: map[string]string{"a": "198.18.0.1"}, fronts: 1},
		{name: "kept from the status across restarts", pool: []string{"198.18.0.0/30"}, gws: []*gwv1.Gateway{tcp("b", 2), holding(tcp("a", 1), "198.18.0.3")},
			want: map[string]string{"a": "198.18.0.3", "b": "198.18.0.0"}, fronts: 2},
		{name: "the older of two claims keeps the address", pool: []string{"198.18.0.0/30"}, gws: []*gwv1.Gateway{holding(tcp("a", 5), "198.18.0.2")},
			svcs: []*corev1.Service{lbService("web", 1, "198.18.0.2", nil)}, want: map[string]string{"a": "198.18.0.0"}, fronts: 1},
		{name: "asked for", pool: []string{"198.18.0.0/30", "2001:db8::/126"}, gws: []*gwv1.Gateway{asking(tcp("a", 1), gwv1.IPAddressType, "198.18.0.2", "198.18.0.3", "2001:db8::1")},
			want: map[string]string{"a": "198.18.0.2,198.18.0.3,2001:db8::1"}, fronts: 1},
		{name: "asked for outside the pools", pool: []string{"198.18.0.0/30"}, gws: []*gwv1.Gateway{asking(tcp("a", 1), gwv1.IPAddressType, "198.18.0.2", "203.0.113.9")},
			want: map[string]string{"a": "True/Accepted False/AddressNotUsable"}, wantText: "203.0.113.9 is in no AddressPool"},
		{name: "asked for, a Service's", pool: []string{"198.18.0.0/30"}, gws: []*gwv1.Gateway{asking(tcp("a", 1), gwv1.IPAddressType, "198.18.0.1")},
			svcs: []*corev1.Service{lbService("web", 0, "198.18.0.1", nil)}, want: map[string]string{"a": "True/Accepted False/AddressNotUsable"}, wantText: "taken by apps/web"},
		{name: "shared with a Service by key, no port clash", pool: []string{"198.18.0.0/30"},
			gws: []*gwv1.Gateway{func() *gwv1.Gateway {
				g := gateway("apps", "a", "hks", 1, listenerOf("tcp", gwv1.TCPProtocolType, 8443, ""))
				g.Annotations = shared
				return g
			}()},
			svcs: []*corev1.Service{lbService("web", 0, "198.18.0.1", shared)}, want: map[string]string{"a": "198.18.0.1"}, fronts: 1},
		{name: "shared key but the port clashes", pool: []string{"198.18.0.0/30"},
			gws:  []*gwv1.Gateway{func() *gwv1.Gateway { g := tcp("a", 1); g.Annotations = shared; return g }()},
			svcs: []*corev1.Service{lbService("web", 0, "198.18.0.1", shared)}, want: map[string]string{"a": "198.18.0.0"}, fronts: 1},
		{name: "exhausted", pool: []string{"198.18.0.0/32"}, gws: []*gwv1.Gateway{tcp("a", 1), tcp("b", 2)},
			want: map[string]string{"a": "198.18.0.0", "b": "True/Accepted False/AddressNotAssigned"}, fronts: 1},
		{name: "not an address", pool: []string{"198.18.0.0/30"}, gws: []*gwv1.Gateway{asking(tcp("a", 1), gwv1.IPAddressType, "not-an-ip")},
			want: map[string]string{"a": "True/Accepted False/AddressNotUsable"}, wantText: "not an IP address"},
		{name: "claims made: a new address waits for its claim", pool: []string{"198.18.0.0/30"}, gws: []*gwv1.Gateway{tcp("a", 1)}, claims: pools.Claims{},
			want: map[string]string{"a": "True/Accepted False/AddressNotAssigned"}, wantText: "claiming 198.18.0.0"},
		{name: "claims made: served once claimed for it", pool: []string{"198.18.0.0/30"}, gws: []*gwv1.Gateway{tcp("a", 1)},
			claims: pools.Claims{netip.MustParseAddr("198.18.0.0"): {Key: "Gateway apps/a"}}, want: map[string]string{"a": "198.18.0.0"}, fronts: 1},
		{name: "claims made: its status address served while it is claimed", pool: []string{"198.18.0.0/30"}, gws: []*gwv1.Gateway{holding(tcp("a", 1), "198.18.0.2")},
			claims: pools.Claims{}, want: map[string]string{"a": "198.18.0.2"}, fronts: 1},
		{name: "claims made: a Service's claim wins over the older Gateway's status (the race's loser moves)", pool: []string{"198.18.0.0/30"},
			gws: []*gwv1.Gateway{holding(tcp("a", 1), "198.18.0.0")}, claims: pools.Claims{netip.MustParseAddr("198.18.0.0"): {Key: "apps/web"},
				netip.MustParseAddr("198.18.0.1"): {Key: "Gateway apps/a"}},
			want: map[string]string{"a": "198.18.0.1"}, fronts: 1},
		{name: "unsupported type", pool: []string{"198.18.0.0/30"}, gws: []*gwv1.Gateway{asking(tcp("a", 1), gwv1.HostnameAddressType, "lb.example.com")},
			want: map[string]string{"a": "False/UnsupportedAddress False/AddressNotUsable"}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			in := Input{Classes: []*gwv1.GatewayClass{class("hks", ControllerName)}, Gateways: tc.gws, Services: tc.svcs}
			res := Compute(in, Options{Pooled: true, Pools: []pools.Pool{testPool(t, "p", tc.pool...)}, Previous: tc.prev, Claims: tc.claims})
			for name, want := range tc.want {
				st := res.Gateways[Key{"apps", name}]
				got := condOf(st.Conditions, "Accepted") + " " + condOf(st.Conditions, "Programmed")
				if !strings.HasPrefix(want, "True/") && !strings.HasPrefix(want, "False/") {
					var as []string
					for _, a := range st.Addresses {
						as = append(as, a.Value)
					}
					got = strings.Join(as, ",")
				}
				if got != want {
					t.Errorf("%s: got %q, want %q (%v)", name, got, want, st.Conditions)
				}
			}
			if len(res.Config.Frontends) != tc.fronts {
				t.Errorf("frontends: got %d, want %d", len(res.Config.Frontends), tc.fronts)
			}
			for _, f := range res.Config.Frontends {
				for _, b := range f.Binds {
					if !b.Transparent || !b.Addr.IsValid() {
						t.Errorf("%s: bind %+v: want its own address, transparent", f.Name, b)
					}
				}
			}
			if tc.wantText != "" {
				st := res.Gateways[Key{"apps", tc.gws[0].Name}]
				i := slices.IndexFunc(st.Conditions, func(c metavCondition) bool { return c.Type == "Programmed" })
				if i < 0 || !strings.Contains(st.Conditions[i].Message, tc.wantText) {
					t.Errorf("Programmed: want a message with %q, got %v", tc.wantText, st.Conditions)
				}
			}
		})
	}
}

// A UDP listener of a pooled Gateway matches its address in the nftables
// table (no bind: not transparent), a TCP one binds it transparent.
func TestGatewayPoolAddressUDP(t *testing.T) {
	d, sd := service("apps", "dns", corev1.ProtocolUDP, 53, 5353, "10.244.2.1")
	g := gateway("apps", "gw", "hks", 1, listenerOf("dns", gwv1.UDPProtocolType, 53, ""), listenerOf("tcp", gwv1.TCPProtocolType, 53, ""))
	in := Input{Classes: []*gwv1.GatewayClass{class("hks", ControllerName)}, Gateways: []*gwv1.Gateway{g},
		UDPRoutes: []*gwv1.UDPRoute{udpRoute("apps", "dns", 1, []gwv1.ParentReference{parent("gw", "dns")}, ref("", "dns", 53, 1))},
		Services:  []*corev1.Service{d}, Slices: []*desired.Slice{sd}}
	res := Compute(in, Options{UDP: true, Pooled: true, Pools: []pools.Pool{testPool(t, "p", "198.18.0.8/30")}})
	if len(res.Config.UDP) != 1 || len(res.Config.UDP[0].Binds) != 1 {
		t.Fatalf("UDP: %+v", res.Config.UDP)
	}
	if b := res.Config.UDP[0].Binds[0]; b.Addr.String() != "198.18.0.8" || b.Port != 53 || b.Transparent {
		t.Errorf("UDP bind %+v, want 198.18.0.8:53, not transparent", b)
	}
	if len(res.Config.Frontends) != 1 || !res.Config.Frontends[0].Binds[0].Transparent || res.Config.Frontends[0].Binds[0].Addr.String() != "198.18.0.8" {
		t.Errorf("TCP frontends %+v", res.Config.Frontends)
	}
}
