package e2e

import (
	"bytes"
	"fmt"
	"strconv"
	"strings"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	gwv1 "sigs.k8s.io/gateway-api/apis/v1"

	"github.com/haproxy-k8s-sync/haproxy-k8s-sync/internal/gateway"
	"github.com/haproxy-k8s-sync/haproxy-k8s-sync/internal/haproxy/haproxytest"
	"github.com/haproxy-k8s-sync/haproxy-k8s-sync/internal/render"
	"github.com/haproxy-k8s-sync/haproxy-k8s-sync/internal/testing/gwcrd"
	"github.com/haproxy-k8s-sync/haproxy-k8s-sync/internal/testing/testcert"
)

// answersHTTPS checks that a GET over TLS naming host at port is answered
// 200 by want with the leaf of want's certificate.
func answersHTTPS(port int, host, want string, leaf []byte) func() error {
	return func() error {
		status, body, got, err := tlsGet(port, host) // ingress_passthrough_test.go
		if err != nil {
			return err
		}
		if status != 200 || !strings.Contains(body, want) || !bytes.Equal(got, leaf) {
			return fmt.Errorf("%s at %d: %d %q (its certificate: %v), want 200 from %s", host, port, status, body, bytes.Equal(got, leaf), want)
		}
		return nil
	}
}

// With --listeners=tproxy --http-listener, an HTTPS Gateway listener is
// served by the fixed HTTPS listener (docs/listeners.md): a second
// Gateway, on a new port with a certificate of its own, is served (its
// certificate by its name, its route) with 0 reloads, the first still
// served; no frontend binds either port.
func TestGatewayHTTPSListenerNewGateway(t *testing.T) {
	g, port1, port2 := httpsListenerEnv(t)
	if g == nil {
		return
	}
	gw, route, leaf := httpsGateways(t, g)
	gw("gw-a", "gw-a", "a.example.com", port1)
	route("a", "gw-a", "a.example.com", "web-a")
	g.startController("--mode=gateway", "--http-listener")
	g.eventually("route accepted", g.routeAccepted(gateway.KindHTTPRoute, "a"))
	g.eventually("a served by web-a", answersHTTPS(port1, "a.example.com", "web-a", leaf["gw-a"]))
	before := g.reloads()

	gw("gw-b", "gw-b", "b.example.com", port2)
	route("b", "gw-b", "b.example.com", "web-b")
	g.eventually("b on gw-b served by web-b", answersHTTPS(port2, "b.example.com", "web-b", leaf["gw-b"]))
	g.eventually("a on gw-a still served by web-a", answersHTTPS(port1, "a.example.com", "web-a", leaf["gw-a"]))
	if r := g.reloads(); r != before {
		t.Errorf("a new HTTPS Gateway on a new port reloaded HAProxy %d times, want 0", r-before)
	}
	cfg := g.config()
	if !strings.Contains(cfg, "frontend "+render.HTTPSListenerFrontend+"\n") {
		t.Errorf("no fixed HTTPS listener in the config:\n%s", cfg)
	}
	noBindOn(t, cfg, port1, port2)
}

// httpsListenerEnv is the two tests' world: tproxy mode whatever the
// suite's, in a network namespace of the test's own (nil: the test ran
// there and is done here), the Gateway CRDs, pods web-a and web-b, and
// two free ports.
func httpsListenerEnv(t *testing.T) (g *gwEnv, port1, port2 int) {
	t.Helper()
	t.Setenv(envListeners, render.ListenersTProxy)
	if !inNetns(t, podAddrs...) {
		return nil, 0, 0
	}
	e := newEnv(t)
	gwcrd.InstallAll(t, e.kube.Config)
	g = newGatewayEnvOn(t, e)
	g.httpPod("web-a", 1, 8080)
	g.httpPod("web-b", 2, 8080)
	return g, haproxytest.FreePort(t), haproxytest.FreePort(t)
}

// noBindOn reports a bind of cfg (haproxy.cfg's text) on one of ports.
func noBindOn(t *testing.T, cfg string, ports ...int) {
	t.Helper()
	for _, p := range ports {
		if strings.Contains(cfg, ":"+strconv.Itoa(p)+"\n") || strings.Contains(cfg, ":"+strconv.Itoa(p)+" ") {
			t.Errorf("a bind on port %d in the config:\n%s", p, cfg)
		}
	}
}

// The fixed HTTPS listener's claims are first-come (docs/listeners.md):
// a Gateway whose name sorts before an existing one's and whose
// certificate (another Secret) names the same host keeps its own frontend
// (a bind on its port); the existing one stays on the listener (no bind on
// its port), its certificate served for its name. A controller restart
// keeps that (the claims read back from the listener's files).
func TestGatewayHTTPSListenerFirstCome(t *testing.T) {
	g, port1, port2 := httpsListenerEnv(t)
	if g == nil {
		return
	}
	gw, route, leaf := httpsGateways(t, g)
	gw("gw-b", "cert-b", "a.example.com", port1)
	route("b", "gw-b", "a.example.com", "web-b")
	g.startController("--mode=gateway", "--http-listener")
	g.eventually("a on gw-b served by web-b", answersHTTPS(port1, "a.example.com", "web-b", leaf["gw-b"]))

	gw("gw-a", "cert-a", "a.example.com", port2) // sorts before gw-b
	route("a", "gw-a", "a.example.com", "web-a")
	g.eventually("a on gw-a served by web-a", answersHTTPS(port2, "a.example.com", "web-a", leaf["gw-a"]))
	check := func(when string) {
		t.Helper()
		if err := answersHTTPS(port1, "a.example.com", "web-b", leaf["gw-b"])(); err != nil {
			t.Errorf("%s: gw-b: %v", when, err)
		}
		cfg := g.config()
		noBindOn(t, cfg, port1) // gw-b: still the listener's
		if !strings.Contains(cfg, ":"+strconv.Itoa(port2)+" ") && !strings.Contains(cfg, ":"+strconv.Itoa(port2)+"\n") {
			t.Errorf("%s: no bind of gw-a's own frontend on %d:\n%s", when, port2, cfg)
		}
	}
	check("gw-a added")

	g.stopController()
	before := g.reloads()
	g.startController("--mode=gateway", "--http-listener")
	// A third Gateway served: the restarted controller's passes ran.
	port3 := haproxytest.FreePort(t)
	gw("gw-c", "cert-c", "c.example.com", port3)
	route("c", "gw-c", "c.example.com", "web-a")
	g.eventually("c on gw-c served by web-a", answersHTTPS(port3, "c.example.com", "web-a", leaf["gw-c"]))
	check("after a restart")
	if r := g.reloads(); r != before {
		t.Logf("the restart reloaded HAProxy %d times", r-before)
	}
}

// httpsGateways makes HTTPS Gateways and their routes in g: gw creates
// Gateway name with one HTTPS listener (section "https") on port for host,
// its certificate a new Secret named secret, whose leaf is leaf[name];
// route attaches an HTTPRoute for host to it, to Service be.
func httpsGateways(t *testing.T, g *gwEnv) (gw func(name, secret, host string, port int), route func(name, gw, host, be string), leaf map[string][]byte) {
	ca := testcert.CA(t, "https listener CA")
	leaf = map[string][]byte{}
	gw = func(name, secret, host string, port int) {
		s, c := rotationSecret(t, secret, host, ca) // gateway_certrotation_test.go
		if _, err := g.client.CoreV1().Secrets(ns).Create(bg, s, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
		leaf[name] = c.Raw
		l := listener("https", gwv1.HTTPSProtocolType, port, host)
		l.TLS = &gwv1.ListenerTLSConfig{CertificateRefs: []gwv1.SecretObjectReference{{Name: gwv1.ObjectName(secret)}}}
		if _, err := g.gw.GatewayV1().Gateways(ns).Create(bg, &gwv1.Gateway{ObjectMeta: metav1.ObjectMeta{Name: name},
			Spec: gwv1.GatewaySpec{GatewayClassName: "hks", Listeners: []gwv1.Listener{l}}}, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	route = func(name, gw, host, be string) {
		section := gwv1.SectionName("https")
		_, err := g.gw.GatewayV1().HTTPRoutes(ns).Create(bg, &gwv1.HTTPRoute{ObjectMeta: metav1.ObjectMeta{Name: name},
			Spec: gwv1.HTTPRouteSpec{CommonRouteSpec: gwv1.CommonRouteSpec{ParentRefs: []gwv1.ParentReference{{Name: gwv1.ObjectName(gw), SectionName: &section}}},
				Hostnames: []gwv1.Hostname{gwv1.Hostname(host)},
				Rules:     []gwv1.HTTPRouteRule{{BackendRefs: []gwv1.HTTPBackendRef{{BackendRef: backendRef(be, 1)}}}}}},
			metav1.CreateOptions{})
		if err != nil {
			t.Fatal(err)
		}
	}
	return gw, route, leaf
}
