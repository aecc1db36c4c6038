package e2e

import (
	"context"
	"fmt"
	"testing"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	gwv1 "sigs.k8s.io/gateway-api/apis/v1"
	gwv1a2 "sigs.k8s.io/gateway-api/apis/v1alpha2"

	"github.com/haproxy-k8s-sync/haproxy-k8s-sync/internal/gateway"
	"github.com/haproxy-k8s-sync/haproxy-k8s-sync/internal/haproxy/haproxytest"
)

// A cluster whose bundle serves TCPRoute as v1alpha2 only (older than
// Gateway API v1.6): the route is read in that version, served, and its
// status written in it; TLSRoute and UDPRoute stay v1.
func TestGatewayTCPRouteV1alpha2(t *testing.T) {
	if !inNetns(t, podAddrs...) {
		return
	}
	g := newGatewayEnvOn(t, newEnv(t), "tcproutes")
	port := haproxytest.FreePort(t)
	g.backend("pod-a", 1, 8080)
	ctx := context.Background()
	g.createGateway("gw", listener("tcp", gwv1.TCPProtocolType, port, ""))
	_, err := g.gw.GatewayV1alpha2().TCPRoutes(ns).Create(ctx, &gwv1a2.TCPRoute{ObjectMeta: metav1.ObjectMeta{Name: "old"},
		Spec: gwv1a2.TCPRouteSpec{CommonRouteSpec: gwv1.CommonRouteSpec{ParentRefs: parentRef("tcp")},
			Rules: []gwv1a2.TCPRouteRule{{BackendRefs: []gwv1.BackendRef{backendRef("pod-a", 1)}}}}}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	g.startController("--mode=gateway")
	g.eventually("served", serves(int32(port), "pod-a"))
	g.eventually("status written as v1alpha2", func() error {
		r, err := g.gw.GatewayV1alpha2().TCPRoutes(ns).Get(ctx, "old", metav1.GetOptions{})
		if err != nil {
			return err
		}
		for _, p := range r.Status.Parents {
			if c := meta.FindStatusCondition(p.Conditions, "Accepted"); p.ControllerName == gateway.ControllerName && c != nil &&
				c.Status == metav1.ConditionTrue && c.ObservedGeneration == r.Generation {
				return nil
			}
		}
		return fmt.Errorf("parents %+v", r.Status.Parents)
	})
}
