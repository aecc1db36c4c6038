package objects

import (
	"strings"
	"testing"
)

// Merge keeps the first of two objects of the same kind, namespace and
// name read from two sources, reporting the second as a duplicate, for
// every kind render reads; an object of another name is kept beside it.
func TestMergeEveryKind(t *testing.T) {
	count := func(s Set, kind string) int {
		return map[string]int{
			"Service": len(s.Services), "EndpointSlice": len(s.EndpointSlices), "Node": len(s.Nodes),
			"AddressPool": len(s.AddressPools), "GatewayClass": len(s.GatewayClasses), "Gateway": len(s.Gateways),
			"HTTPRoute": len(s.HTTPRoutes), "GRPCRoute": len(s.GRPCRoutes), "ReferenceGrant": len(s.ReferenceGrants),
			"IngressClass": len(s.IngressClasses), "Ingress": len(s.Ingresses), "Secret": len(s.Secrets),
			"ConfigMap": len(s.ConfigMaps),
		}[kind]
	}
	for _, tc := range []struct{ apiVersion, kind, ref string }{
		{"v1", "Service", "default/a"},
		{"discovery.k8s.io/v1", "EndpointSlice", "default/a"},
		{"v1", "Node", "/a"},
		{"haproxy-k8s-sync.io/v1alpha1", "AddressPool", "/a"},
		{"gateway.networking.k8s.io/v1", "GatewayClass", "/a"},
		{"gateway.networking.k8s.io/v1", "Gateway", "default/a"},
		{"gateway.networking.k8s.io/v1", "HTTPRoute", "default/a"},
		{"gateway.networking.k8s.io/v1", "GRPCRoute", "default/a"},
		{"gateway.networking.k8s.io/v1beta1", "ReferenceGrant", "default/a"},
		{"networking.k8s.io/v1", "IngressClass", "/a"},
		{"networking.k8s.io/v1", "Ingress", "default/a"},
		{"v1", "Secret", "default/a"},
		{"v1", "ConfigMap", "default/a"},
	} {
		t.Run(tc.kind, func(t *testing.T) {
			doc := func(name string) string {
				return "apiVersion: " + tc.apiVersion + "\nkind: " + tc.kind + "\nmetadata: {name: " + name + "}\n"
			}
			load := func(src, in string) Set {
				t.Helper()
				s, errs := Load(strings.NewReader(in), src)
				if len(errs) > 0 || count(s, tc.kind) == 0 {
					t.Fatalf("%s: %d loaded, errors %v", src, count(s, tc.kind), errs)
				}
				return s
			}
			var s Set
			if errs := s.Merge(load("x", doc("a"))); len(errs) > 0 {
				t.Fatal(errs)
			}
			errs := s.Merge(load("y", doc("a")+"---\n"+doc("b")))
			if len(errs) != 1 || !strings.Contains(errs[0].Error(), tc.kind+" "+strings.TrimPrefix(tc.ref, "/")) || !strings.Contains(errs[0].Error(), "duplicate object") {
				t.Errorf("merged again: %v, want one duplicate naming %s %s", errs, tc.kind, tc.ref)
			}
			if n := count(s, tc.kind); n != 2 {
				t.Errorf("%d %s kept, want 2 (a once, b)", n, tc.kind)
			}
		})
	}
}
