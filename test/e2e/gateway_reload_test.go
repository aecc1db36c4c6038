package e2e

import (
	"fmt"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/util/retry"
	gwv1 "sigs.k8s.io/gateway-api/apis/v1"

	"github.com/haproxy-k8s-sync/haproxy-k8s-sync/internal/haproxy/haproxytest"
	"github.com/haproxy-k8s-sync/haproxy-k8s-sync/internal/testing/lab"
)

// setWeights sets the weights of TCPRoute name's backendRefs, in order.
func (g *gwEnv) setWeights(name string, weights ...int32) {
	g.t.Helper()
	// The status writer updates the route too: retried on a conflict.
	err := retry.RetryOnConflict(retry.DefaultRetry, func() error {
		rt, err := g.gw.GatewayV1().TCPRoutes(ns).Get(bg, name, metav1.GetOptions{})
		if err != nil {
			return err
		}
		for i, w := range weights {
			rt.Spec.Rules[0].BackendRefs[i].Weight = &w
		}
		_, err = g.gw.GatewayV1().TCPRoutes(ns).Update(bg, rt, metav1.UpdateOptions{})
		return err
	})
	if err != nil {
		g.t.Fatal(err)
	}
}

// Route and endpoint changes go through the Runtime API: a TCPRoute's
// weights changed (a backend's share to 0 and back, all to the other),
// and an endpoint added to a backend, with 0 reloads; the route's
// traffic follows each change.
func TestGatewayRouteChangesWithoutReload(t *testing.T) {
	if !inNetns(t, podAddrs...) {
		return
	}
	g := newGatewayEnv(t)
	port := haproxytest.FreePort(t)
	g.backend("pod-a", 1, 8080)
	g.backend("pod-b", 2, 8080)
	g.createGateway("gw", listener("tcp", gwv1.TCPProtocolType, port, ""))
	g.tcpRoute("split", "tcp", backendRef("pod-a", 1), backendRef("pod-b", 1))
	g.startController("--mode=gateway")
	g.eventually("route accepted", g.routeAccepted("TCPRoute", "split"))
	g.eventually("served by both", serves(int32(port), "pod-a", "pod-b"))
	before := g.reloads()

	for _, step := range []struct {
		weights []int32
		want    []string
	}{
		{[]int32{1, 0}, []string{"pod-a"}},
		{[]int32{0, 5}, []string{"pod-b"}},
		{[]int32{3, 1}, []string{"pod-a", "pod-b"}},
	} {
		g.setWeights("split", step.weights...)
		g.eventually(fmt.Sprintf("weights %v: served by %v", step.weights, step.want), serves(int32(port), step.want...))
	}
	// An endpoint more for pod-b: a server slot through the Runtime API.
	g.setWeights("split", 0, 1)
	pod := lab.NewNodeServer("pod-c", podAddrs[2])
	if err := pod.Listen(8080); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(pod.Close)
	sl := lab.SliceFor(ns, "pod-b", 8080, []lab.Endpoint{{IP: podAddrs[1], Node: "n1", Ready: true}, {IP: podAddrs[2], Node: "n1", Ready: true}})
	if err := lab.ApplySlice(bg, g.client, sl); err != nil {
		t.Fatal(err)
	}
	g.eventually("the new endpoint serves", serves(int32(port), "pod-b", "pod-c"))
	if r := g.reloads(); r != before {
		t.Errorf("route and endpoint changes reloaded HAProxy %d times, want 0", r-before)
	}
	if err := contains(g.config(), "map_int("); err != nil {
		t.Errorf("no route map: %v", err)
	}
}
