package gateway

import (
	"net/netip"
	"testing"

	corev1 "k8s.io/api/core/v1"
	gwv1 "sigs.k8s.io/gateway-api/apis/v1"

	"github.com/haproxy-k8s-sync/haproxy-k8s-sync/internal/desired"
	"github.com/haproxy-k8s-sync/haproxy-k8s-sync/internal/plan"
	"github.com/haproxy-k8s-sync/haproxy-k8s-sync/internal/render"
	"github.com/haproxy-k8s-sync/haproxy-k8s-sync/internal/testing/golden"
)

// A Gateway and a Service of one namespace, name and port, the Gateway's
// TCP and TLS listeners routed to the Service: no backend is named like a
// frontend (HAProxy 3.3 and later refuse the config: "has the same name
// as frontend ... no longer supported as of 3.3"), and the binary the
// tests run loads it.
func TestFrontendAndBackendNamesDiffer(t *testing.T) {
	web, sweb := service("apps", "web", corev1.ProtocolTCP, 80, 8080, "10.244.0.5")
	tls, stls := service("apps", "web-tls", corev1.ProtocolTCP, 443, 8443, "10.244.0.6")
	in := Input{
		Classes: []*gwv1.GatewayClass{class("hks", ControllerName)},
		Gateways: []*gwv1.Gateway{
			gateway("apps", "web", "hks", 0, listenerOf("tcp", gwv1.TCPProtocolType, 80, "")),
			gateway("apps", "web-tls", "hks", 0, listenerOf("tls", gwv1.TLSProtocolType, 443, "*.example.com")),
		},
		TCPRoutes: []*gwv1.TCPRoute{tcpRoute("apps", "r", 1, []gwv1.ParentReference{parent("web", "tcp")}, ref("", "web", 80, 1))},
		TLSRoutes: []*gwv1.TLSRoute{tlsRoute("apps", "t", 1, []gwv1.ParentReference{parent("web-tls", "tls")}, []string{"a.example.com"}, ref("", "web-tls", 443, 1))},
		Services:  []*corev1.Service{web, tls},
		Slices:    []*desired.Slice{sweb, stls},
	}
	res := Compute(in, Options{Addresses: []netip.Addr{lbAddr}})
	if len(res.Config.Frontends) != 2 || len(res.Config.Backends) != 2 {
		t.Fatalf("%d frontends, %d backends; want 2 and 2", len(res.Config.Frontends), len(res.Config.Backends))
	}
	frontends := map[string]bool{}
	for _, f := range res.Config.Frontends {
		frontends[f.Name] = true
	}
	for _, b := range res.Config.Backends {
		if frontends[b.Name] {
			t.Errorf("backend %s is named like a frontend", b.Name)
		}
	}
	layout, _ := plan.Assign(res.Config, nil, true)
	golden.HAProxyAccepts(t, render.Config(res.Config, layout, render.Options{StatsSocket: "/run/hks/admin.sock"}))
}
