package source

import (
	"encoding/json"
	"fmt"
	"runtime"
	"testing"
	"unsafe"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	gwv1 "sigs.k8s.io/gateway-api/apis/v1"

	"github.com/haproxy-k8s-sync/haproxy-k8s-sync/internal/testing/liveheap"
)

// routeJSON is route i as the apiserver answers it: the CRD's defaults
// filled in, and the status our publisher writes.
func routeJSON(i int) []byte {
	return fmt.Appendf(nil, `{"kind":"HTTPRoute","apiVersion":"gateway.networking.k8s.io/v1",
"metadata":{"name":"r%d","namespace":"default","uid":"6f1c0a8e-0000-4000-8000-%012d","resourceVersion":"%d","generation":1,
 "creationTimestamp":"2026-11-29T08:00:00Z","annotations":{"example.com/owner":"team-a"}},
"spec":{"parentRefs":[{"group":"gateway.networking.k8s.io","kind":"Gateway","name":"gw","sectionName":"http"}],
 "hostnames":["r%d.example.com"],
 "rules":[{"matches":[{"path":{"type":"PathPrefix","value":"/"},"headers":[{"type":"Exact","name":"x-env","value":"prod"}],"method":"GET"}],
  "filters":[{"type":"RequestHeaderModifier","requestHeaderModifier":{"set":[{"name":"x-a","value":"b"}]}}],
  "backendRefs":[{"group":"","kind":"Service","name":"s%d","port":80,"weight":1}]}]},
"status":{"parents":[{"parentRef":{"group":"gateway.networking.k8s.io","kind":"Gateway","name":"gw","sectionName":"http"},
 "controllerName":"haproxy-k8s-sync.io/gateway",
 "conditions":[{"type":"Accepted","status":"True","observedGeneration":1,"lastTransitionTime":"2026-11-29T08:00:01Z","reason":"Accepted","message":"Route is accepted"},
  {"type":"ResolvedRefs","status":"True","observedGeneration":1,"lastTransitionTime":"2026-11-29T08:00:01Z","reason":"ResolvedRefs","message":"All references are resolved"}]}]}}`,
		i, i, 1000+i, i, i%5000)
}

// appliedJSON is routeJSON(i) created by `kubectl apply`: the object (as
// written) kept again in the last-applied-configuration annotation.
func appliedJSON(tb testing.TB, i int) []byte {
	tb.Helper()
	r := decodeRoute(tb, routeJSON(i))
	r.Status = gwv1.HTTPRouteStatus{}
	last, err := json.Marshal(r)
	if err != nil {
		tb.Fatal(err)
	}
	r = decodeRoute(tb, routeJSON(i))
	r.Annotations[corev1.LastAppliedConfigAnnotation] = string(last)
	out, err := json.Marshal(r)
	if err != nil {
		tb.Fatal(err)
	}
	return out
}

func decodeRoute(tb testing.TB, raw []byte) *gwv1.HTTPRoute {
	tb.Helper()
	r := &gwv1.HTTPRoute{}
	if err := json.Unmarshal(raw, r); err != nil {
		tb.Fatal(err)
	}
	return r
}

func sameBytes(a, b string) bool { return unsafe.StringData(a) == unsafe.StringData(b) }

// TestInternKeepsTheRoute: the transform leaves each route equal to the
// decoded one, and two routes' repeated strings share their bytes while
// what is their own does not.
func TestInternKeepsTheRoute(t *testing.T) {
	a, b := decodeRoute(t, appliedJSON(t, 1)), decodeRoute(t, routeJSON(5001)) // the same Service, s1
	for _, r := range []*gwv1.HTTPRoute{a, b} {
		want := r.DeepCopy()
		delete(want.Annotations, corev1.LastAppliedConfigAnnotation) // dropped: read by nothing
		out, err := gatewayTransform(r)
		if err != nil {
			t.Fatal(err)
		}
		if !equality.Semantic.DeepEqual(out, want) {
			t.Fatalf("transformed route differs from the decoded one:\n%+v\n%+v", out, want)
		}
	}
	rule := func(r *gwv1.HTTPRoute) gwv1.HTTPRouteRule { return r.Spec.Rules[0] }
	cond := func(r *gwv1.HTTPRoute, i int) string { return r.Status.Parents[0].Conditions[i].Message }
	shared := []struct {
		name string
		of   func(*gwv1.HTTPRoute) string
	}{
		{"kind", func(r *gwv1.HTTPRoute) string { return r.Kind }},
		{"apiVersion", func(r *gwv1.HTTPRoute) string { return r.APIVersion }},
		{"namespace", func(r *gwv1.HTTPRoute) string { return r.Namespace }},
		{"parentRef group", func(r *gwv1.HTTPRoute) string { return string(*r.Spec.ParentRefs[0].Group) }},
		{"parentRef kind", func(r *gwv1.HTTPRoute) string { return string(*r.Spec.ParentRefs[0].Kind) }},
		{"parentRef name", func(r *gwv1.HTTPRoute) string { return string(r.Spec.ParentRefs[0].Name) }},
		{"parentRef sectionName", func(r *gwv1.HTTPRoute) string { return string(*r.Spec.ParentRefs[0].SectionName) }},
		{"path type", func(r *gwv1.HTTPRoute) string { return string(*rule(r).Matches[0].Path.Type) }},
		{"path value", func(r *gwv1.HTTPRoute) string { return *rule(r).Matches[0].Path.Value }},
		{"header match type", func(r *gwv1.HTTPRoute) string { return string(*rule(r).Matches[0].Headers[0].Type) }},
		{"header match name", func(r *gwv1.HTTPRoute) string { return string(rule(r).Matches[0].Headers[0].Name) }},
		{"method", func(r *gwv1.HTTPRoute) string { return string(*rule(r).Matches[0].Method) }},
		{"filter type", func(r *gwv1.HTTPRoute) string { return string(rule(r).Filters[0].Type) }},
		{"backendRef kind", func(r *gwv1.HTTPRoute) string { return string(*rule(r).BackendRefs[0].Kind) }},
		{"backendRef name", func(r *gwv1.HTTPRoute) string { return string(rule(r).BackendRefs[0].Name) }},
		{"status parentRef group", func(r *gwv1.HTTPRoute) string { return string(*r.Status.Parents[0].ParentRef.Group) }},
		{"status controllerName", func(r *gwv1.HTTPRoute) string { return string(r.Status.Parents[0].ControllerName) }},
		{"condition type", func(r *gwv1.HTTPRoute) string { return r.Status.Parents[0].Conditions[1].Type }},
		{"condition status", func(r *gwv1.HTTPRoute) string { return string(r.Status.Parents[0].Conditions[1].Status) }},
		{"condition reason", func(r *gwv1.HTTPRoute) string { return r.Status.Parents[0].Conditions[1].Reason }},
		{"condition message", func(r *gwv1.HTTPRoute) string { return cond(r, 0) }},
	}
	for _, c := range shared {
		if va, vb := c.of(a), c.of(b); va != vb || !sameBytes(va, vb) {
			t.Errorf("%s: %q and %q not shared", c.name, va, vb)
		}
	}
	own := []struct {
		name string
		of   func(*gwv1.HTTPRoute) string
	}{
		{"name", func(r *gwv1.HTTPRoute) string { return r.Name }},
		{"hostname", func(r *gwv1.HTTPRoute) string { return string(r.Spec.Hostnames[0]) }},
	}
	for _, c := range own {
		if va, vb := c.of(a), c.of(b); va == vb {
			t.Errorf("%s: the two routes should differ, both %q", c.name, va)
		}
	}
	if len(a.Annotations) != 1 {
		t.Errorf("annotations %v: want the route's own, without kubectl's copy of the object", a.Annotations)
	}
	if a.Spec.ParentRefs[0].Group == b.Spec.ParentRefs[0].Group {
		t.Error("two routes share a pointer: each object must keep its own")
	}
}

// BenchmarkRouteCacheHeap: the heap N HTTPRoutes (routeJSON, with our
// status) keep once decoded and through the informers' transform, per
// route: "decoded" as main kept them before interning (managedFields
// dropped only), "transformed" through gatewayTransform; "applied/" the
// same routes created by kubectl apply (appliedJSON).
//
//	go test ./internal/source -run '^$' -bench BenchmarkRouteCacheHeap -benchtime 1x
func BenchmarkRouteCacheHeap(b *testing.B) {
	const n = 10000
	raw, applied := make([][]byte, n), make([][]byte, n)
	for i := range raw {
		raw[i], applied[i] = routeJSON(i), appliedJSON(b, i)
	}
	asMain := func(o any) (any, error) { o.(*gwv1.HTTPRoute).SetManagedFields(nil); return o, nil }
	for _, v := range []struct {
		name string
		raw  [][]byte
		tf   func(any) (any, error)
	}{
		{"decoded", raw, asMain},
		{"transformed", raw, gatewayTransform},
		{"applied/decoded", applied, asMain},
		{"applied/transformed", applied, gatewayTransform},
	} {
		b.Run(v.name, func(b *testing.B) {
			for range b.N {
				kept := make([]any, n)
				grew := liveheap.Growth(func() {
					for i := range kept {
						r := &gwv1.HTTPRoute{}
						if err := json.Unmarshal(v.raw[i], r); err != nil {
							b.Fatal(err)
						}
						o, err := v.tf(r)
						if err != nil {
							b.Fatal(err)
						}
						kept[i] = o
					}
				})
				b.ReportMetric(float64(grew)/n, "B/route")
				runtime.KeepAlive(kept)
			}
		})
	}
}

// BenchmarkInternHTTPRoute: the transform's interning of one route (the
// cost a list of 10,000 routes pays at sync, 10,000 times).
func BenchmarkInternHTTPRoute(b *testing.B) {
	routes := make([]*gwv1.HTTPRoute, 1000)
	for i := range routes {
		routes[i] = decodeRoute(b, routeJSON(i))
	}
	i := 0
	for b.Loop() {
		internHTTPRoute(routes[i%len(routes)])
		i++
	}
}
