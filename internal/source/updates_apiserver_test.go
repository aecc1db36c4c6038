package source

import (
	"context"
	"fmt"
	"sync/atomic"
	"testing"
	"time"

	netv1 "k8s.io/api/networking/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	gwv1 "sigs.k8s.io/gateway-api/apis/v1"
	gwclient "sigs.k8s.io/gateway-api/pkg/client/clientset/versioned"

	"github.com/haproxy-k8s-sync/haproxy-k8s-sync/internal/gateway"
)

// On a real apiserver: a status written to an HTTPRoute or an Ingress
// (what the publishers do after each pass) reaches the Gateway source's
// handlers as a quiet update, no change (no pass); a spec or label change
// of either is a change. Without Relevant every one of them was a pass.
func TestStatusWritesAreNoChange(t *testing.T) {
	kube := sharedAPIServer(t)
	ns := testNamespace(t, kube)
	client := kube.Client(t)
	gc, err := gwclient.NewForConfig(kube.Config)
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	src := NewGateway(client, gc, false, map[string]string{gateway.KindHTTPRoute: RouteV1})
	src.WithIngress(gateway.Key{})
	var changes, quiet atomic.Int64
	if err := src.OnChangeOr(func() { changes.Add(1) }, func(any) { quiet.Add(1) }); err != nil {
		t.Fatal(err)
	}
	rt, err := gc.GatewayV1().HTTPRoutes(ns).Create(ctx, &gwv1.HTTPRoute{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "r"},
		Spec: gwv1.HTTPRouteSpec{Hostnames: []gwv1.Hostname{"a.example.com"}}}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	class := "hks"
	ing, err := client.NetworkingV1().Ingresses(ns).Create(ctx, &netv1.Ingress{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "i"},
		Spec: netv1.IngressSpec{IngressClassName: &class, Rules: []netv1.IngressRule{{Host: "a.example.com"}}}}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	sctx, cancel := context.WithCancel(ctx)
	t.Cleanup(cancel)
	if err := src.Start(sctx, 30*time.Second); err != nil {
		t.Fatal(err)
	}
	// step writes and waits (polling, with a deadline) until the cache
	// holds resourceVersion rv of it; then the changes and quiet
	// updates it made must be wantChanges and wantQuiet.
	step := func(what string, write func() (string, error), cached func() string, wantChanges, wantQuiet int64) {
		t.Helper()
		c0, q0 := changes.Load(), quiet.Load()
		rv, err := write()
		if err != nil {
			t.Fatalf("%s: %v", what, err)
		}
		deadline := time.Now().Add(20 * time.Second)
		for cached() != rv || changes.Load()-c0+quiet.Load()-q0 < wantChanges+wantQuiet {
			if time.Now().After(deadline) {
				t.Fatalf("%s: the cache has resourceVersion %s, want %s (changes %d, quiet %d)", what, cached(), rv, changes.Load()-c0, quiet.Load()-q0)
			}
			time.Sleep(10 * time.Millisecond) // poll interval
		}
		if c, q := changes.Load()-c0, quiet.Load()-q0; c != wantChanges || q != wantQuiet {
			t.Fatalf("%s: %d changes and %d quiet updates, want %d and %d", what, c, q, wantChanges, wantQuiet)
		}
	}
	routeRV := func() string {
		o, ok := src.Object(gateway.KindHTTPRoute, ns, "r")
		if !ok {
			return ""
		}
		return o.(*gwv1.HTTPRoute).ResourceVersion
	}
	ingRV := func() string {
		o, ok := src.IngressObject(ns, "i")
		if !ok {
			return ""
		}
		return o.ResourceVersion
	}
	step("route status written", func() (string, error) {
		rt.Status.Parents = []gwv1.RouteParentStatus{{ParentRef: gwv1.ParentReference{Name: "gw"}, ControllerName: gateway.ControllerName,
			Conditions: []metav1.Condition{{Type: "Accepted", Status: metav1.ConditionTrue, Reason: "Accepted", LastTransitionTime: metav1.Now()}}}}
		rt, err = gc.GatewayV1().HTTPRoutes(ns).UpdateStatus(ctx, rt, metav1.UpdateOptions{})
		return rv(rt, err)
	}, routeRV, 0, 1)
	step("route spec changed", func() (string, error) {
		rt.Spec.Hostnames = []gwv1.Hostname{"b.example.com"}
		rt, err = gc.GatewayV1().HTTPRoutes(ns).Update(ctx, rt, metav1.UpdateOptions{})
		return rv(rt, err)
	}, routeRV, 1, 0)
	step("route label changed", func() (string, error) {
		rt.Labels = map[string]string{"tier": "b"}
		rt, err = gc.GatewayV1().HTTPRoutes(ns).Update(ctx, rt, metav1.UpdateOptions{})
		return rv(rt, err)
	}, routeRV, 1, 0)
	step("ingress status written", func() (string, error) {
		ing.Status.LoadBalancer.Ingress = []netv1.IngressLoadBalancerIngress{{IP: "192.0.2.1"}}
		ing, err = client.NetworkingV1().Ingresses(ns).UpdateStatus(ctx, ing, metav1.UpdateOptions{})
		return rv(ing, err)
	}, ingRV, 0, 1)
	step("ingress spec changed", func() (string, error) {
		ing.Spec.Rules[0].Host = "b.example.com"
		ing, err = client.NetworkingV1().Ingresses(ns).Update(ctx, ing, metav1.UpdateOptions{})
		return rv(ing, err)
	}, ingRV, 1, 0)
}

func rv(o metav1.Object, err error) (string, error) {
	if err != nil {
		return "", err
	}
	if o.GetResourceVersion() == "" {
		return "", fmt.Errorf("%s: no resourceVersion", o.GetName())
	}
	return o.GetResourceVersion(), nil
}
