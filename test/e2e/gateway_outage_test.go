package e2e

import (
	"strings"
	"testing"
	"time"

	gwv1 "sigs.k8s.io/gateway-api/apis/v1"

	"github.com/haproxy-k8s-sync/haproxy-k8s-sync/internal/gateway"
	"github.com/haproxy-k8s-sync/haproxy-k8s-sync/internal/haproxy/haproxytest"
)

// TestRelistAfterAPIServerOutage for the gateway mode: the real
// apiserver is stopped for apiserverOutage and started again. HAProxy
// serves the route meanwhile; once the apiserver is back, the informers
// relist at once (internal/source/relist.go): a route change made right
// after is served, and a route created right after is statused, within
// the convergence target of issue 23 (5 s), instead of after the
// reflectors' backoff.
func TestGatewayRelistAfterAPIServerOutage(t *testing.T) {
	if !inNetns(t, podAddrs...) {
		return
	}
	g := newGatewayEnv(t)
	port, other := haproxytest.FreePort(t), haproxytest.FreePort(t)
	g.backend("pod-a", 1, 8080)
	g.backend("pod-b", 2, 8080)
	g.createGateway("gw",
		listener("tcp", gwv1.TCPProtocolType, port, ""),
		listener("other", gwv1.TCPProtocolType, other, ""))
	g.tcpRoute("split", "tcp", backendRef("pod-a", 1), backendRef("pod-b", 0))
	g.startController("--mode=gateway")
	g.eventually("route accepted", g.routeAccepted(gateway.KindTCPRoute, "split"))
	g.eventually("served by pod-a", serves(int32(port), "pod-a"))

	g.kube.StopAPIServer()
	// The outage's length, not synchronisation.
	time.Sleep(apiserverOutage)
	if err := serves(int32(port), "pod-a")(); err != nil {
		t.Errorf("the route not served during the outage: %v", err)
	}
	if err := g.kube.StartAPIServer(); err != nil {
		t.Fatalf("apiserver did not start again: %v", err)
	}
	back := time.Now()
	g.setWeights("split", 0, 1)
	g.tcpRoute("late", "other", backendRef("pod-a", 1))
	if err := waitUntil(targetConverge, serves(int32(port), "pod-b")); err != nil {
		t.Fatalf("a route change made once the apiserver was back: %v", err)
	}
	t.Logf("route change served %v after the apiserver was ready again", time.Since(back).Round(10*time.Millisecond))
	if err := waitUntil(targetConverge, g.routeAccepted(gateway.KindTCPRoute, "late")); err != nil {
		t.Fatalf("a route created once the apiserver was back: %v", err)
	}
	t.Logf("new route accepted %v after the apiserver was ready again", time.Since(back).Round(10*time.Millisecond))
	if err := waitUntil(targetConverge, serves(int32(other), "pod-a")); err != nil {
		t.Fatalf("the new route: %v", err)
	}
	if !strings.Contains(g.ctlLog.String(), "relisted after the apiserver outage") {
		t.Errorf("the controller did not say it relisted")
	}
}
