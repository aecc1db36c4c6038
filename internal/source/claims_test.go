package source

import (
	"context"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	netv1 "k8s.io/api/networking/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	dynamicfake "k8s.io/client-go/dynamic/fake"
	"k8s.io/client-go/kubernetes/fake"
	gwv1 "sigs.k8s.io/gateway-api/apis/v1"
	gwfake "sigs.k8s.io/gateway-api/pkg/client/clientset/versioned/fake"

	"github.com/haproxy-k8s-sync/haproxy-k8s-sync/internal/claims"
	"github.com/haproxy-k8s-sync/haproxy-k8s-sync/internal/gateway"
	"github.com/haproxy-k8s-sync/haproxy-k8s-sync/internal/pools"
)

// Both sources answer whether a claim's object exists, from their caches
// (Exists) and by a read of the apiserver (Lookup), alike: the same
// object (name and UID) exists, another UID or none is gone, a kind or
// namespace not watched is unknown.
func TestClaimsExistence(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	svc := &corev1.Service{ObjectMeta: metav1.ObjectMeta{Namespace: "a", Name: "web", UID: "svc-uid"}}
	gw := &gwv1.Gateway{ObjectMeta: metav1.ObjectMeta{Namespace: "a", Name: "gw", UID: "gw-uid"}}
	ugw := &unstructured.Unstructured{}
	ugw.SetAPIVersion("gateway.networking.k8s.io/v1")
	ugw.SetKind("Gateway")
	ugw.SetNamespace("a")
	ugw.SetName("gw")
	ugw.SetUID("gw-uid")
	// Created through the clients: a fake's tracker files a Gateway given
	// at construction under v1beta1 (the same Go type), not v1.
	dyn := func() *dynamicfake.FakeDynamicClient {
		return dynamicfake.NewSimpleDynamicClientWithCustomListKinds(runtime.NewScheme(), map[schema.GroupVersionResource]string{
			pools.GVR: "AddressPoolList", GatewayGVR: "GatewayList",
		})
	}
	parent := func(kind claims.Kind, ns, name string, uid types.UID) claims.Parent {
		return claims.Parent{Kind: kind, Namespace: ns, Name: name, UID: uid}
	}

	type answerer interface {
		Exists(claims.Parent) claims.Existence
		Lookup(context.Context, claims.Parent) (claims.Existence, error)
	}
	d := dyn()
	if _, err := d.Resource(GatewayGVR).Namespace("a").Create(ctx, ugw, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	gc := gwfake.NewSimpleClientset()
	if _, err := gc.GatewayV1().Gateways("a").Create(ctx, gw, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	all := New(fake.NewClientset(svc), "")
	all.WithPools(d)
	all.WithGateways()
	all.WithClaims()
	noGateways := New(fake.NewClientset(svc), "")
	single := New(fake.NewClientset(svc), "b")
	gws := NewGateway(fake.NewClientset(svc), gc, false, map[string]string{})
	gws.WithClaims()
	// With --ingress-class: the IngressClasses too (an IngressClass's pool
	// address, cluster-scoped).
	ic := &netv1.IngressClass{ObjectMeta: metav1.ObjectMeta{Name: "hks", UID: "ic-uid"}}
	ings := NewGateway(fake.NewClientset(svc, ic), gc, false, map[string]string{})
	ings.WithIngress(gateway.Key{})
	ings.WithClaims()
	for _, start := range []func(context.Context, time.Duration) error{all.Start, noGateways.Start, single.Start, gws.Start, ings.Start} {
		if err := start(ctx, 10*time.Second); err != nil {
			t.Fatal(err)
		}
	}

	tests := []struct {
		name   string
		src    answerer
		parent claims.Parent
		want   claims.Existence
	}{
		{"service exists", all, parent(claims.Service, "a", "web", "svc-uid"), claims.Exists},
		{"service of another UID", all, parent(claims.Service, "a", "web", "old-uid"), claims.Gone},
		{"service gone", all, parent(claims.Service, "a", "db", "db-uid"), claims.Gone},
		{"gateway exists", all, parent(claims.Gateway, "a", "gw", "gw-uid"), claims.Exists},
		{"gateway gone", all, parent(claims.Gateway, "a", "other", "x"), claims.Gone},
		{"gateways not watched", noGateways, parent(claims.Gateway, "a", "gw", "gw-uid"), claims.Unknown},
		{"namespace not watched", single, parent(claims.Service, "a", "web", "svc-uid"), claims.Unknown},
		{"watched namespace, gone", single, parent(claims.Service, "b", "web", "svc-uid"), claims.Gone},
		{"gateway mode: service exists", gws, parent(claims.Service, "a", "web", "svc-uid"), claims.Exists},
		{"gateway mode: service gone", gws, parent(claims.Service, "a", "web", "old-uid"), claims.Gone},
		{"gateway mode: gateway exists", gws, parent(claims.Gateway, "a", "gw", "gw-uid"), claims.Exists},
		{"gateway mode: gateway gone", gws, parent(claims.Gateway, "b", "gw", "gw-uid"), claims.Gone},
		{"unknown kind", gws, parent("Other", "a", "web", "svc-uid"), claims.Unknown},
		{"ingress: class exists", ings, parent(claims.IngressClass, "", "hks", "ic-uid"), claims.Exists},
		{"ingress: class of another UID", ings, parent(claims.IngressClass, "", "hks", "old-uid"), claims.Gone},
		{"ingress: class gone", ings, parent(claims.IngressClass, "", "other", "x"), claims.Gone},
		{"gateway mode without Ingresses: classes not watched", gws, parent(claims.IngressClass, "", "hks", "ic-uid"), claims.Unknown},
		{"services mode: classes not watched", all, parent(claims.IngressClass, "", "hks", "ic-uid"), claims.Unknown},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := tt.src.Exists(tt.parent); got != tt.want {
				t.Errorf("Exists = %v, want %v", got, tt.want)
			}
			got, err := tt.src.Lookup(ctx, tt.parent)
			if err != nil || got != tt.want {
				t.Errorf("Lookup = %v, %v; want %v", got, err, tt.want)
			}
		})
	}
	if n := len(all.Claims()) + len(gws.Claims()); n != 0 {
		t.Errorf("%d claims cached, want none", n)
	}
}
