package e2e

import (
	"fmt"
	"os"
	"slices"
	"strings"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/util/retry"
	gwv1 "sigs.k8s.io/gateway-api/apis/v1"

	"github.com/haproxy-k8s-sync/haproxy-k8s-sync/internal/haproxy/haproxytest"
	"github.com/haproxy-k8s-sync/haproxy-k8s-sync/internal/render"
)

// envBackendPool, when set (HKS_E2E_BACKEND_POOL=N), runs every
// controller of the suite with --backend-pool=N (a test's own flag wins):
// the suite in the pool's mode.
const envBackendPool = "HKS_E2E_BACKEND_POOL"

// poolArgs is --backend-pool from envBackendPool, for a controller with a
// local HAProxy (the flag is refused beside the Data Plane API driver).
func poolArgs(extra []string) []string {
	n := os.Getenv(envBackendPool)
	if n == "" || slices.ContainsFunc(extra, func(a string) bool { return strings.HasPrefix(a, "--dataplane") }) {
		return nil
	}
	return []string{"--backend-pool=" + n}
}

// backendOf is the HAProxy backend the frontend whose name starts with
// prefix sends to, as the config on disk says ("" when none): the
// Service's own backend, or with a pool the spare it occupies.
func (e *env) backendOf(prefix string) string {
	var out, fe string
	_ = render.ScanConfig(strings.NewReader(e.config()), func(section, name string, f []string) {
		if section == "frontend" && strings.HasPrefix(name, prefix) && f[0] == "default_backend" && len(f) == 2 && fe == "" {
			fe, out = name, f[1]
		}
	})
	return out
}

// setBackendRefs replaces the backendRefs of TCPRoute name's rule.
func (g *gwEnv) setBackendRefs(name string, refs ...gwv1.BackendRef) {
	g.t.Helper()
	err := retry.RetryOnConflict(retry.DefaultRetry, func() error {
		rt, err := g.gw.GatewayV1().TCPRoutes(ns).Get(bg, name, metav1.GetOptions{})
		if err != nil {
			return err
		}
		rt.Spec.Rules[0].BackendRefs = refs
		_, err = g.gw.GatewayV1().TCPRoutes(ns).Update(bg, rt, metav1.UpdateOptions{})
		return err
	})
	if err != nil {
		g.t.Fatal(err)
	}
}

// With --backend-pool, a route to Services no route used before is map
// data: each new Service's backend takes a spare backend through the
// Runtime API, 0 reloads, and the route's traffic follows; a Service a
// route no longer uses gives its spare back, and the next one takes it.
func TestGatewayNewBackendFromPool(t *testing.T) {
	if !inNetns(t, podAddrs...) {
		return
	}
	g := newGatewayEnv(t)
	port := haproxytest.FreePort(t)
	g.backend("pod-a", 1, 8080)
	g.createGateway("gw", listener("tcp", gwv1.TCPProtocolType, port, ""))
	g.tcpRoute("r", "tcp", backendRef("pod-a", 1))
	g.startController("--mode=gateway", "--backend-pool=4")
	g.eventually("route accepted", g.routeAccepted("TCPRoute", "r"))
	g.eventually("served by pod-a", serves(int32(port), "pod-a"))
	if err := readyForNewBackends(g.config()); err != nil { // dynamic_test.go
		t.Fatalf("no spare backends: %v", err)
	}
	before := g.reloads()

	// Services no route uses yet: no backend, nothing to serve.
	g.backend("pod-b", 2, 8080)
	g.backend("pod-c", 3, 8080)
	for _, step := range [][]string{{"pod-b"}, {"pod-b", "pod-c"}, {"pod-c"}, {"pod-a", "pod-c"}} {
		var refs []gwv1.BackendRef
		for _, svc := range step {
			refs = append(refs, backendRef(svc, 1))
		}
		g.setBackendRefs("r", refs...)
		g.eventually(fmt.Sprintf("served by %v", step), serves(int32(port), step...))
	}
	if r := g.reloads(); r != before {
		t.Errorf("routes to new Services reloaded HAProxy %d times, want 0", r-before)
	}
}
