package gateway

import (
	"fmt"
	"net/netip"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	gwv1 "sigs.k8s.io/gateway-api/apis/v1"
	"sigs.k8s.io/yaml"

	"github.com/haproxy-k8s-sync/haproxy-k8s-sync/internal/desired"
	"github.com/haproxy-k8s-sync/haproxy-k8s-sync/internal/model"
	"github.com/haproxy-k8s-sync/haproxy-k8s-sync/internal/plan"
	"github.com/haproxy-k8s-sync/haproxy-k8s-sync/internal/render"
	"github.com/haproxy-k8s-sync/haproxy-k8s-sync/internal/testing/golden"
)

// base: a Gateway with a TCP listener (a route split 80/20), a TLS
// listener (two routes by server name) and a UDP listener.
func base() Input {
	a, sa := service("apps", "a", corev1.ProtocolTCP, 80, 8080, "10.244.0.5", "10.244.0.6")
	b, sb := service("apps", "b", corev1.ProtocolTCP, 80, 8081, "10.244.1.7")
	d, sd := service("apps", "dns", corev1.ProtocolUDP, 53, 5353, "10.244.2.1", "10.244.2.2")
	return Input{
		Classes: []*gwv1.GatewayClass{class("hks", ControllerName), class("other", "example.com/other")},
		Gateways: []*gwv1.Gateway{gateway("apps", "gw", "hks", 0,
			listenerOf("tcp", gwv1.TCPProtocolType, 9000, ""),
			listenerOf("tls", gwv1.TLSProtocolType, 9443, "*.example.com"),
			listenerOf("dns", gwv1.UDPProtocolType, 53, ""))},
		TCPRoutes: []*gwv1.TCPRoute{tcpRoute("apps", "split", 1, []gwv1.ParentReference{parent("gw", "tcp")}, ref("", "a", 80, 80), ref("", "b", 80, 20))},
		TLSRoutes: []*gwv1.TLSRoute{
			tlsRoute("apps", "ta", 1, []gwv1.ParentReference{parent("gw", "")}, []string{"a.example.com"}, ref("", "a", 80, 1)),
			tlsRoute("apps", "tb", 2, []gwv1.ParentReference{parent("gw", "tls")}, []string{"b.example.com", "b.example.net"}, ref("", "b", 80, 1)),
		},
		UDPRoutes: []*gwv1.UDPRoute{udpRoute("apps", "dns", 1, []gwv1.ParentReference{parent("gw", "dns")}, ref("", "dns", 53, 1))},
		Services:  []*corev1.Service{a, b, d},
		Slices:    []*desired.Slice{sa, sb, sd},
	}
}

func TestGolden(t *testing.T) {
	res := Compute(base(), Options{Addresses: []netip.Addr{lbAddr}, UDP: true})
	layout, _ := plan.Assign(res.Config, nil, true)
	cfg := render.Config(res.Config, layout, render.Options{StatsSocket: "/run/hks/admin.sock"})
	golden.Assert(t, "base.cfg", cfg)
	golden.HAProxyAccepts(t, cfg)
	st, err := yaml.Marshal(map[string]any{"classes": res.Classes, "gateways": keyed(res.Gateways), "routes": keyed(res.Routes.Map()), "udp": res.Config.UDP})
	if err != nil {
		t.Fatal(err)
	}
	golden.Assert(t, "base-status.yaml", st)
}

func keyed[K interface {
	comparable
	fmt.Stringer
}, V any](m map[K]V) map[string]V {
	out := map[string]V{}
	for k, v := range m {
		out[k.String()] = v
	}
	return out
}

func condOf(cs []metav1.Condition, typ string) string {
	for _, c := range cs {
		if c.Type == typ {
			return string(c.Status) + "/" + c.Reason
		}
	}
	return "-"
}

func routeCond(res Result, kind, ns, name, typ string) string {
	sts := res.Routes.Get(RouteKey{kind, Key{ns, name}})
	if len(sts) == 0 {
		return "none"
	}
	return condOf(sts[0].Conditions, typ)
}

func listenerStatus(res Result, ns, gw, name string) gwv1.ListenerStatus {
	for _, l := range res.Gateways[Key{ns, gw}].Listeners {
		if string(l.Name) == name {
			return l
		}
	}
	return gwv1.ListenerStatus{}
}

func routesOfFrontend(res Result, port string) string {
	for _, f := range res.Config.Frontends {
		if strings.HasSuffix(f.Name, "_"+port) {
			var out []string
			for _, r := range f.Routes {
				var bs []string
				for _, b := range r.Backends {
					bs = append(bs, fmt.Sprintf("%s:%d", b.Name, b.Weight))
				}
				out = append(out, r.SNI+"="+strings.Join(bs, ","))
			}
			return strings.Join(out, " ")
		}
	}
	return "no frontend"
}

func TestCompute(t *testing.T) {
	for _, tc := range []struct {
		name   string
		change func(in *Input)
		opts   Options
		check  func(t *testing.T, res Result)
	}{
		{"served", nil, Options{UDP: true}, func(t *testing.T, res Result) {
			want(t, routeCond(res, KindTCPRoute, "apps", "split", "Accepted"), "True/Accepted")
			want(t, routeCond(res, KindTCPRoute, "apps", "split", "ResolvedRefs"), "True/ResolvedRefs")
			want(t, routesOfFrontend(res, "9000"), "=gwt_apps_a_80:80,gwt_apps_b_80:20")
			want(t, routesOfFrontend(res, "9443"), "a.example.com=gwt_apps_a_80:1 b.example.com=gwt_apps_b_80:1")
			want(t, fmt.Sprint(listenerStatus(res, "apps", "gw", "tls").AttachedRoutes), "2")
			want(t, condOf(res.Gateways[Key{"apps", "gw"}].Conditions, "Programmed"), "True/Programmed")
			want(t, condOf(res.Classes["hks"].Conditions, "Accepted"), "True/Accepted")
			if _, ok := res.Classes["other"]; ok {
				t.Error("another controller's class has a status from us")
			}
		}},
		{"without UDP the UDP listener is not accepted", nil, Options{}, func(t *testing.T, res Result) {
			want(t, condOf(listenerStatus(res, "apps", "gw", "dns").Conditions, "Accepted"), "False/UnsupportedProtocol")
			want(t, condOf(res.Gateways[Key{"apps", "gw"}].Conditions, "Accepted"), "True/ListenersNotValid")
			want(t, routeCond(res, KindUDPRoute, "apps", "dns", "Accepted"), "False/NotAllowedByListeners")
			want(t, fmt.Sprint(len(res.Config.UDP)), "0")
		}},
		{"a listener port outside 1-65535 is refused, never wrapped", func(in *Input) { in.Gateways[0].Spec.Listeners[0].Port = 70000 }, Options{}, func(t *testing.T, res Result) {
			want(t, condOf(listenerStatus(res, "apps", "gw", "tcp").Conditions, "Accepted"), "False/UnsupportedValue")
			want(t, routesOfFrontend(res, "4464"), "no frontend")
		}},
		{"a class of another controller", func(in *Input) { in.Gateways[0].Spec.GatewayClassName = "other" }, Options{}, func(t *testing.T, res Result) {
			want(t, fmt.Sprint(len(res.Gateways), res.Routes.Len(), len(res.Config.Frontends)), "0 0 0")
		}},
		{"cross-namespace ref without a grant", func(in *Input) {
			c, sc := service("other", "c", corev1.ProtocolTCP, 80, 80, "10.244.3.3")
			in.Services, in.Slices = append(in.Services, c), append(in.Slices, sc)
			in.TCPRoutes[0].Spec.Rules[0].BackendRefs[1] = ref("other", "c", 80, 20)
		}, Options{}, func(t *testing.T, res Result) {
			want(t, routeCond(res, KindTCPRoute, "apps", "split", "Accepted"), "True/Accepted")
			want(t, routeCond(res, KindTCPRoute, "apps", "split", "ResolvedRefs"), "False/RefNotPermitted")
			want(t, routesOfFrontend(res, "9000"), "=gwt_apps_a_80:80,_reject:20")
		}},
		{"cross-namespace ref with a grant", func(in *Input) {
			c, sc := service("other", "c", corev1.ProtocolTCP, 80, 80, "10.244.3.3")
			in.Services, in.Slices = append(in.Services, c), append(in.Slices, sc)
			in.TCPRoutes[0].Spec.Rules[0].BackendRefs[1] = ref("other", "c", 80, 20)
			in.Grants = append(in.Grants, grant("other", "apps", "TCPRoute", "c"))
		}, Options{}, func(t *testing.T, res Result) {
			want(t, routeCond(res, KindTCPRoute, "apps", "split", "ResolvedRefs"), "True/ResolvedRefs")
			want(t, routesOfFrontend(res, "9000"), "=gwt_apps_a_80:80,gwt_other_c_80:20")
		}},
		{"a grant for another kind does not count", func(in *Input) {
			c, sc := service("other", "c", corev1.ProtocolTCP, 80, 80, "10.244.3.3")
			in.Services, in.Slices = append(in.Services, c), append(in.Slices, sc)
			in.TCPRoutes[0].Spec.Rules[0].BackendRefs[1] = ref("other", "c", 80, 20)
			in.Grants = append(in.Grants, grant("other", "apps", "TLSRoute", ""))
		}, Options{}, func(t *testing.T, res Result) {
			want(t, routeCond(res, KindTCPRoute, "apps", "split", "ResolvedRefs"), "False/RefNotPermitted")
		}},
		{"missing Service and wrong protocol", func(in *Input) {
			in.TCPRoutes[0].Spec.Rules[0].BackendRefs = []gwv1.BackendRef{ref("", "nope", 80, 1)}
			in.TLSRoutes[0].Spec.Rules[0].BackendRefs = []gwv1.BackendRef{ref("", "dns", 53, 1)}
		}, Options{}, func(t *testing.T, res Result) {
			want(t, routeCond(res, KindTCPRoute, "apps", "split", "ResolvedRefs"), "False/BackendNotFound")
			want(t, routeCond(res, KindTLSRoute, "apps", "ta", "ResolvedRefs"), "False/UnsupportedProtocol")
			want(t, routesOfFrontend(res, "9000"), "=_reject:1")
		}},
		// As the conformance suite (tcproute/udproute-multiple-routes-
		// attachment) wants: both Accepted and counted, the oldest served.
		{"a second TCPRoute on a taken listener", func(in *Input) {
			in.TCPRoutes = append(in.TCPRoutes, tcpRoute("apps", "late", 5, []gwv1.ParentReference{parent("gw", "tcp")}, ref("", "b", 80, 1)))
		}, Options{}, func(t *testing.T, res Result) {
			want(t, routeCond(res, KindTCPRoute, "apps", "split", "Accepted"), "True/Accepted")
			want(t, routeCond(res, KindTCPRoute, "apps", "late", "Accepted"), "True/Accepted")
			want(t, fmt.Sprint(listenerStatus(res, "apps", "gw", "tcp").AttachedRoutes), "2")
			want(t, routesOfFrontend(res, "9000"), "=gwt_apps_a_80:80,gwt_apps_b_80:20")
		}},
		{"a second UDPRoute on a taken listener", func(in *Input) {
			c, sc := service("apps", "c", corev1.ProtocolUDP, 53, 53, "10.244.9.9")
			in.Services, in.Slices = append(in.Services, c), append(in.Slices, sc)
			in.UDPRoutes = append(in.UDPRoutes, udpRoute("apps", "late", 5, []gwv1.ParentReference{parent("gw", "dns")}, ref("", "c", 53, 1)))
		}, Options{UDP: true}, func(t *testing.T, res Result) {
			want(t, routeCond(res, KindUDPRoute, "apps", "late", "Accepted"), "True/Accepted")
			want(t, fmt.Sprint(listenerStatus(res, "apps", "gw", "dns").AttachedRoutes), "2")
			want(t, fmt.Sprint(res.Config.UDP[0].Servers), fmt.Sprint([]model.Server{{Addr: netip.MustParseAddr("10.244.2.1"), Port: 5353}, {Addr: netip.MustParseAddr("10.244.2.2"), Port: 5353}}))
		}},
		{"a TLS server name taken by an older route", func(in *Input) {
			in.TLSRoutes[1].Spec.Hostnames = []gwv1.Hostname{"a.example.com"}
		}, Options{}, func(t *testing.T, res Result) {
			want(t, routeCond(res, KindTLSRoute, "apps", "tb", "Accepted"), "True/Accepted")
			want(t, routesOfFrontend(res, "9443"), "a.example.com=gwt_apps_a_80:1")
		}},
		{"hostnames outside the listener's", func(in *Input) {
			in.TLSRoutes[1].Spec.Hostnames = []gwv1.Hostname{"b.example.net"}
		}, Options{}, func(t *testing.T, res Result) {
			want(t, routeCond(res, KindTLSRoute, "apps", "tb", "Accepted"), "False/NoMatchingListenerHostname")
		}},
		{"a wildcard route narrows to the listener's name", func(in *Input) {
			h := gwv1.Hostname("x.example.com")
			in.Gateways[0].Spec.Listeners[1].Hostname = &h
			in.TLSRoutes[0].Spec.Hostnames = []gwv1.Hostname{"*.example.com"}
		}, Options{}, func(t *testing.T, res Result) {
			want(t, routesOfFrontend(res, "9443"), "x.example.com=gwt_apps_a_80:1")
			want(t, routeCond(res, KindTLSRoute, "apps", "tb", "Accepted"), "False/NoMatchingListenerHostname")
		}},
		{"server names that could carry syntax are never used", func(in *Input) {
			in.TLSRoutes[0].Spec.Hostnames = []gwv1.Hostname{"a.example.com } || { always_true", "A.EXAMPLE.COM"}
		}, Options{}, func(t *testing.T, res Result) {
			want(t, routeCond(res, KindTLSRoute, "apps", "ta", "Accepted"), "False/NoMatchingListenerHostname")
			want(t, routesOfFrontend(res, "9443"), "b.example.com=gwt_apps_b_80:1")
		}},
		{"unknown sectionName", func(in *Input) { in.TCPRoutes[0].Spec.ParentRefs = []gwv1.ParentReference{parent("gw", "nope")} }, Options{}, func(t *testing.T, res Result) {
			want(t, routeCond(res, KindTCPRoute, "apps", "split", "Accepted"), "False/NoMatchingParent")
		}},
		{"routes from another namespace are not allowed by default", func(in *Input) {
			in.TCPRoutes[0].Namespace = "else"
			in.TCPRoutes[0].Spec.ParentRefs[0].Namespace = ptr(gwv1.Namespace("apps"))
		}, Options{}, func(t *testing.T, res Result) {
			want(t, routeCond(res, KindTCPRoute, "else", "split", "Accepted"), "False/NotAllowedByListeners")
			want(t, routesOfFrontend(res, "9000"), "=_reject:1")
		}},
		{"routes from all namespaces", func(in *Input) {
			in.TCPRoutes[0].Namespace = "else"
			in.TCPRoutes[0].Spec.ParentRefs[0].Namespace = ptr(gwv1.Namespace("apps"))
			all := gwv1.NamespacesFromAll
			in.Gateways[0].Spec.Listeners[0].AllowedRoutes = &gwv1.AllowedRoutes{Namespaces: &gwv1.RouteNamespaces{From: &all}}
		}, Options{}, func(t *testing.T, res Result) {
			want(t, routeCond(res, KindTCPRoute, "else", "split", "Accepted"), "True/Accepted")
			want(t, routeCond(res, KindTCPRoute, "else", "split", "ResolvedRefs"), "False/BackendNotFound") // else/a
		}},
		{"an HTTP listener and a bad kind", func(in *Input) {
			in.Gateways[0].Spec.Listeners = append(in.Gateways[0].Spec.Listeners, listenerOf("http", gwv1.HTTPProtocolType, 80, ""))
			in.Gateways[0].Spec.Listeners[0].AllowedRoutes = &gwv1.AllowedRoutes{Kinds: []gwv1.RouteGroupKind{{Kind: "TCPRoute"}, {Kind: "HTTPRoute"}}}
		}, Options{}, func(t *testing.T, res Result) {
			want(t, condOf(listenerStatus(res, "apps", "gw", "http").Conditions, "Accepted"), "True/Accepted")
			want(t, condOf(listenerStatus(res, "apps", "gw", "tcp").Conditions, "ResolvedRefs"), "False/InvalidRouteKinds")
			want(t, fmt.Sprint(len(listenerStatus(res, "apps", "gw", "tcp").SupportedKinds)), "1")
			if httpOf(res, "80") == nil {
				t.Error("no HTTP frontend on port 80")
			}
		}},
		{"a TLS listener terminating without certificateRefs: not accepted", func(in *Input) {
			m := gwv1.TLSModeTerminate
			in.Gateways[0].Spec.Listeners[1].TLS.Mode = &m
		}, Options{}, func(t *testing.T, res Result) {
			want(t, condOf(listenerStatus(res, "apps", "gw", "tls").Conditions, "Accepted"), "False/UnsupportedValue")
			want(t, routesOfFrontend(res, "9443"), "no frontend")
		}},
		{"no valid listener: the Gateway is not accepted", func(in *Input) {
			in.Gateways[0].Spec.Listeners = []gwv1.Listener{listenerOf("x", "INVALID", 1111, "")}
		}, Options{}, func(t *testing.T, res Result) {
			want(t, condOf(res.Gateways[Key{"apps", "gw"}].Conditions, "Accepted"), "False/ListenersNotValid")
			want(t, condOf(res.Gateways[Key{"apps", "gw"}].Conditions, "Programmed"), "False/Invalid")
			want(t, condOf(listenerStatus(res, "apps", "gw", "x").Conditions, "Accepted"), "False/UnsupportedProtocol")
		}},
		{"TCP and TLS on one port conflict", func(in *Input) { in.Gateways[0].Spec.Listeners[1].Port = 9000 }, Options{}, func(t *testing.T, res Result) {
			want(t, condOf(listenerStatus(res, "apps", "gw", "tcp").Conditions, "Conflicted"), "True/ProtocolConflict")
			want(t, condOf(listenerStatus(res, "apps", "gw", "tls").Conditions, "Programmed"), "False/Invalid")
			want(t, routesOfFrontend(res, "9000"), "no frontend")
		}},
		{"an older Gateway keeps its port", func(in *Input) {
			in.Gateways = append(in.Gateways, gateway("apps", "young", "hks", 9, listenerOf("tcp", gwv1.TCPProtocolType, 9000, "")))
		}, Options{}, func(t *testing.T, res Result) {
			want(t, condOf(listenerStatus(res, "apps", "young", "tcp").Conditions, "Accepted"), "False/PortUnavailable")
			want(t, condOf(listenerStatus(res, "apps", "gw", "tcp").Conditions, "Accepted"), "True/Accepted")
		}},
		{"spec.addresses not ours", func(in *Input) {
			in.Gateways[0].Spec.Addresses = []gwv1.GatewaySpecAddress{{Value: "192.0.2.9"}}
		}, Options{Addresses: []netip.Addr{lbAddr}}, func(t *testing.T, res Result) {
			want(t, condOf(res.Gateways[Key{"apps", "gw"}].Conditions, "Programmed"), "False/AddressNotUsable")
			want(t, routeCond(res, KindTCPRoute, "apps", "split", "Accepted"), "False/Pending")
			want(t, fmt.Sprint(len(res.Config.Frontends)), "0")
		}},
		{"weight 0 everywhere refuses", func(in *Input) {
			in.TCPRoutes[0].Spec.Rules[0].BackendRefs = []gwv1.BackendRef{ref("", "a", 80, 0)}
		}, Options{}, func(t *testing.T, res Result) {
			want(t, routesOfFrontend(res, "9000"), "=_reject:1")
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			in := base()
			if tc.change != nil {
				tc.change(&in)
			}
			res := Compute(in, tc.opts)
			tc.check(t, res)
			// Whatever the input, what renders is what HAProxy takes.
			for _, f := range res.Config.Frontends {
				for _, r := range f.Routes {
					if r.SNI != "" && !model.ValidSNI(r.SNI) {
						t.Errorf("invalid server name %q in the model", r.SNI)
					}
				}
			}
		})
	}
}

func TestUDPWeights(t *testing.T) {
	a, sa := service("apps", "a", corev1.ProtocolUDP, 53, 53, "10.244.0.1", "10.244.0.2")
	b, sb := service("apps", "b", corev1.ProtocolUDP, 53, 53, "10.244.1.1", "10.244.1.2", "10.244.1.3")
	in := base()
	in.Services = append(in.Services, a, b)
	in.Slices = append(in.Slices, sa, sb)
	in.UDPRoutes[0].Spec.Rules[0].BackendRefs = []gwv1.BackendRef{ref("", "a", 53, 80), ref("", "b", 53, 20)}
	res := Compute(in, Options{UDP: true})
	if len(res.Config.UDP) != 1 {
		t.Fatalf("UDP: %+v", res.Config.UDP)
	}
	u := res.Config.UDP[0]
	var sumA, sumB int
	for i, s := range u.Servers {
		if strings.HasPrefix(s.Addr.String(), "10.244.0.") {
			sumA += int(u.Weights[i])
		} else {
			sumB += int(u.Weights[i])
		}
	}
	if sumA*20 != sumB*80 {
		t.Fatalf("weights %v: a %d, b %d, want 80:20", u.Weights, sumA, sumB)
	}
}

func want(t *testing.T, got, want string) {
	t.Helper()
	if got != want {
		t.Errorf("got %q, want %q", got, want)
	}
}

func ptr[T any](v T) *T { return &v }

func TestName(t *testing.T) {
	for _, tc := range []struct {
		parts []string
		want  string
	}{
		{[]string{"apps", "gw", "443"}, "gw_apps_gw_443"},
		{[]string{"apps", "my.gw", "443"}, "gw_apps_my-gw_443_"},
		{[]string{"apps", "my-gw", "443"}, "gw_apps_my-gw_443"},
		{[]string{"a b", "x\n\tuse_backend y", "1"}, "gw_a-b_x--use-backend-y_1_"},
		{[]string{strings.Repeat("a", 63), strings.Repeat("b", 63), "65535"}, "gw_" + strings.Repeat("a", 63) + "_" + strings.Repeat("b", 23) + "_"},
	} {
		got := name("gw", tc.parts...)
		if !strings.HasPrefix(got, tc.want) || len(got) > 100 {
			t.Errorf("name(%q) = %q, want prefix %q (at most 100 bytes)", tc.parts, got, tc.want)
		}
		for _, c := range got {
			if (c < 'a' || c > 'z') && (c < '0' || c > '9') && c != '-' && c != '_' {
				t.Errorf("name(%q) = %q holds %q", tc.parts, got, c)
			}
		}
	}
	// Names that clean to the same text stay apart.
	if name("gw", "apps", "my.gw", "1") == name("gw", "apps", "my-gw", "1") {
		t.Error("my.gw and my-gw share a name")
	}
}

// httpOf is the HTTP table of the frontend on port; nil for none.
func httpOf(res Result, port string) *model.HTTP {
	for _, f := range res.Config.Frontends {
		if strings.HasSuffix(f.Name, "_"+port) {
			return f.HTTP
		}
	}
	return nil
}
