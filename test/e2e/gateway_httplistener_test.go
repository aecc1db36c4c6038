package e2e

import (
	"strings"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	gwv1 "sigs.k8s.io/gateway-api/apis/v1"

	"github.com/haproxy-k8s-sync/haproxy-k8s-sync/internal/gateway"
	"github.com/haproxy-k8s-sync/haproxy-k8s-sync/internal/haproxy/haproxytest"
	"github.com/haproxy-k8s-sync/haproxy-k8s-sync/internal/render"
	"github.com/haproxy-k8s-sync/haproxy-k8s-sync/internal/testing/gwcrd"
)

// With --listeners=tproxy --http-listener, a plain HTTP Gateway listener
// is served by the fixed HTTP listener (docs/listeners.md): a second
// Gateway whose HTTP listener is on a new port, with a route for the
// first's hostname to another Service, is served by its own route (the
// right Pod by host) with 0 reloads counted from the master's show proc,
// and the first Gateway is still served by its own.
func TestGatewayHTTPListenerNewGateway(t *testing.T) {
	t.Setenv(envListeners, render.ListenersTProxy) // this mode whatever the suite's
	if !inNetns(t, podAddrs...) {
		return
	}
	e := newEnv(t)
	gwcrd.InstallAll(t, e.kube.Config) // HTTPRoute's CRD too
	g := newGatewayEnvOn(t, e)
	port1, port2 := haproxytest.FreePort(t), haproxytest.FreePort(t)
	g.httpPod("web-a", 1, 8080)
	g.httpPod("web-b", 2, 8080)
	g.createGateway("gw", listener("http", gwv1.HTTPProtocolType, port1, ""))
	g.httpRoute("a", "http", "a.example.com", backendRef("web-a", 1))
	g.httpRoute("b", "http", "b.example.com", backendRef("web-b", 1))
	g.startController("--mode=gateway", "--http-listener")
	g.eventually("route accepted", g.routeAccepted(gateway.KindHTTPRoute, "a"))
	g.eventually("a served by web-a", answersHTTP(port1, "a.example.com", "web-a"))
	g.eventually("b served by web-b", answersHTTP(port1, "b.example.com", "web-b"))
	before := g.reloads()

	g.createGateway("gw2", listener("http", gwv1.HTTPProtocolType, port2, ""))
	section := gwv1.SectionName("http")
	_, err := g.gw.GatewayV1().HTTPRoutes(ns).Create(bg, &gwv1.HTTPRoute{ObjectMeta: metav1.ObjectMeta{Name: "a2"},
		Spec: gwv1.HTTPRouteSpec{CommonRouteSpec: gwv1.CommonRouteSpec{ParentRefs: []gwv1.ParentReference{{Name: "gw2", SectionName: &section}}},
			Hostnames: []gwv1.Hostname{"a.example.com"},
			Rules:     []gwv1.HTTPRouteRule{{BackendRefs: []gwv1.HTTPBackendRef{{BackendRef: backendRef("web-b", 1)}}}}}},
		metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	g.eventually("a on gw2 served by web-b", answersHTTP(port2, "a.example.com", "web-b"))
	g.eventually("a on gw still served by web-a", answersHTTP(port1, "a.example.com", "web-a"))
	g.eventually("b on gw still served by web-b", answersHTTP(port1, "b.example.com", "web-b"))
	if r := g.reloads(); r != before {
		t.Errorf("a new Gateway with an HTTP listener on a new port reloaded HAProxy %d times, want 0", r-before)
	}
	// Served by the fixed HTTP listener: no frontend binds either port.
	cfg := g.config()
	if !strings.Contains(cfg, "frontend "+render.HTTPListenerFrontend+"\n") {
		t.Errorf("no fixed HTTP listener in the config:\n%s", cfg)
	}
	noBindOn(t, cfg, port1, port2) // gateway_httpslistener_test.go
}
