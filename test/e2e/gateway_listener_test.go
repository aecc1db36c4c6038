package e2e

import (
	"fmt"
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	gwv1 "sigs.k8s.io/gateway-api/apis/v1"

	"github.com/haproxy-k8s-sync/haproxy-k8s-sync/internal/haproxy/haproxytest"
	"github.com/haproxy-k8s-sync/haproxy-k8s-sync/internal/testing/kubeapi"
)

// gw2VIP is the second Gateway's address in TestGatewayTCPBehindListener:
// a documentation address of the test's own network namespace.
const gw2VIP = "203.0.113.11"

// gw1BehindListener is the start of the tests of a second Gateway behind
// the fixed listener: in a network namespace of the test's own, tproxy
// mode, Services pod-a and pod-b, gw1's TCP listener on tproxyVIP:port1
// to pod-a served, the pool's spares ready; port2 is free for the second
// Gateway on gw2VIP. g is nil in the process that only ran the test in
// its namespace.
func gw1BehindListener(t *testing.T) (g *gwEnv, port1, port2 int) {
	addrs := append([]string{gw2VIP}, podAddrs...)
	if !tproxyMode() {
		addrs = append(addrs, tproxyVIP) // inNetns adds it in tproxy mode only
	}
	if !inNetns(t, addrs...) {
		return nil, 0, 0
	}
	g = newGatewayEnvOn(t, newEnvListening(t, kubeapi.Start(t), listening{tproxy: true}))
	port1, port2 = haproxytest.FreePort(t), haproxytest.FreePort(t)
	g.backend("pod-a", 1, 8080)
	g.backend("pod-b", 2, 8080)
	g.gatewayOn("gw1", port1, "pod-a", tproxyVIP) // gateway_pools_test.go
	g.startController("--mode=gateway", "--bind-address", gw2VIP)
	g.eventually("gw1 served by pod-a", servesOnAddr(tproxyVIP, int32(port1), "pod-a"))
	if err := readyForNewBackends(g.config()); err != nil { // dynamic_test.go
		t.Fatalf("no spare backends: %v", err)
	}
	return g, port1, port2
}

// In tproxy mode (whatever the suite's) the gateway mode's TCP listeners
// go behind the fixed listener (render.ListenedTCPRoutes): a second
// Gateway with a TCP listener on a new address and a new port, its route
// split between a Service the first uses and one no route used (a spare
// of the pool), is served with 0 reloads (the master's `show proc`), and
// the first Gateway keeps serving; neither has a frontend of its own.
func TestGatewayTCPBehindListener(t *testing.T) {
	g, port1, port2 := gw1BehindListener(t)
	if g == nil {
		return
	}
	if strings.Contains(g.config(), "\nfrontend gw_") {
		t.Fatalf("a TCP listener kept a frontend of its own in tproxy mode:\n%s", g.config())
	}
	before := g.reloads()

	ip := gwv1.IPAddressType
	gw := &gwv1.Gateway{ObjectMeta: metav1.ObjectMeta{Name: "gw2"}, Spec: gwv1.GatewaySpec{GatewayClassName: "hks",
		Addresses: []gwv1.GatewaySpecAddress{{Type: &ip, Value: gw2VIP}},
		Listeners: []gwv1.Listener{listener("tcp", gwv1.TCPProtocolType, port2, "")}}}
	if _, err := g.gw.GatewayV1().Gateways(ns).Create(bg, gw, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	_, err := g.gw.GatewayV1().TCPRoutes(ns).Create(bg, &gwv1.TCPRoute{ObjectMeta: metav1.ObjectMeta{Name: "gw2"},
		Spec: gwv1.TCPRouteSpec{CommonRouteSpec: gwv1.CommonRouteSpec{ParentRefs: []gwv1.ParentReference{{Name: "gw2"}}},
			Rules: []gwv1.TCPRouteRule{{BackendRefs: []gwv1.BackendRef{backendRef("pod-a", 1), backendRef("pod-b", 1)}}}}}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	g.eventually("gw2 served by pod-a and pod-b", servesOnAddr(gw2VIP, int32(port2), "pod-a", "pod-b"))
	if err := servesOnAddr(tproxyVIP, int32(port1), "pod-a")(); err != nil {
		t.Errorf("gw1 after gw2: %v", err)
	}
	if err := servesOnAddr(gw2VIP, int32(port1))(); err != nil { // no name: refused
		t.Errorf("gw2's address on gw1's port: %v, want refused", err)
	}
	if r := g.reloads(); r != before {
		t.Errorf("a new Gateway with a TCP listener reloaded HAProxy %d times, want 0", r-before)
	}
	if err := g.listenerRoutesHave(gw2VIP, int32(port2)); err != nil {
		t.Errorf("gw2 behind the listener: %v", err)
	}
}

// In tproxy mode the gateway mode's TLS passthrough listeners go behind
// the fixed listener too (render.ListenedTLSRoutes): a second Gateway
// with a TLS passthrough listener on a new address and port, its routes
// by server name (exact and a wildcard), is served by SNI with 0
// reloads; a name no route takes is not served; the first Gateway's TCP
// listener keeps serving a client that sends no ClientHello, without
// waiting the inspect delay (its key is accepted before the wait).
func TestGatewayTLSBehindListener(t *testing.T) {
	g, port1, port2 := gw1BehindListener(t)
	if g == nil {
		return
	}
	before := g.reloads()

	ip := gwv1.IPAddressType
	gw := &gwv1.Gateway{ObjectMeta: metav1.ObjectMeta{Name: "gw2"}, Spec: gwv1.GatewaySpec{GatewayClassName: "hks",
		Addresses: []gwv1.GatewaySpecAddress{{Type: &ip, Value: gw2VIP}},
		Listeners: []gwv1.Listener{listener("tls", gwv1.TLSProtocolType, port2, "")}}}
	if _, err := g.gw.GatewayV1().Gateways(ns).Create(bg, gw, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	for name, r := range map[string]struct {
		host string
		to   string
	}{"exact": {"a.example.com", "pod-a"}, "wild": {"*.example.com", "pod-b"}} {
		_, err := g.gw.GatewayV1().TLSRoutes(ns).Create(bg, &gwv1.TLSRoute{ObjectMeta: metav1.ObjectMeta{Name: name},
			Spec: gwv1.TLSRouteSpec{CommonRouteSpec: gwv1.CommonRouteSpec{ParentRefs: []gwv1.ParentReference{{Name: "gw2"}}},
				Hostnames: []gwv1.Hostname{gwv1.Hostname(r.host)}, Rules: []gwv1.TLSRouteRule{{BackendRefs: []gwv1.BackendRef{backendRef(r.to, 1)}}}}},
			metav1.CreateOptions{})
		if err != nil {
			t.Fatal(err)
		}
	}
	hellos := map[string][]byte{}
	for _, n := range []string{"a.example.com", "x.y.example.com", "c.example.org"} {
		hellos[n] = clientHello(t, n)
	}
	g.eventually("gw2 served by SNI", func() error {
		for n, want := range map[string]string{"a.example.com": "pod-a", "x.y.example.com": "pod-b"} {
			if got, err := probeTLSAt(gw2VIP, port2, hellos[n]); err != nil || got != want {
				return fmt.Errorf("%s: got %q (%v), want %s", n, got, err, want)
			}
		}
		return nil
	})
	for i := range 10 {
		for n, want := range map[string]string{"a.example.com": "pod-a", "x.y.example.com": "pod-b"} {
			if got, err := probeTLSAt(gw2VIP, port2, hellos[n]); err != nil || got != want {
				t.Fatalf("probe %d, %s: got %q (%v), want %s", i, n, got, err, want)
			}
		}
	}
	if got, err := probeTLSAt(gw2VIP, port2, hellos["c.example.org"]); err == nil {
		t.Errorf("c.example.org, which no route takes, was served by %q", got)
	}
	start := time.Now()
	if err := servesOnAddr(tproxyVIP, int32(port1), "pod-a")(); err != nil {
		t.Errorf("gw1 after gw2: %v", err)
	}
	if d := time.Since(start); d > 2*time.Second { // 5 probes; one inspect delay would be 5 s
		t.Errorf("gw1's plain TCP connections took %v: they waited for a ClientHello", d)
	}
	if r := g.reloads(); r != before {
		t.Errorf("a new Gateway with a TLS passthrough listener reloaded HAProxy %d times, want 0", r-before)
	}
	if err := g.listenerTLSHas(gw2VIP, int32(port2)); err != nil {
		t.Errorf("gw2 behind the listener: %v", err)
	}
	if strings.Contains(g.config(), "\nfrontend gw_") {
		t.Errorf("a gateway listener kept a frontend of its own in tproxy mode:\n%s", g.config())
	}
}
