package source

import (
	"testing"

	corev1 "k8s.io/api/core/v1"
	netv1 "k8s.io/api/networking/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	gwv1 "sigs.k8s.io/gateway-api/apis/v1"
	gwv1beta1 "sigs.k8s.io/gateway-api/apis/v1beta1"

	"github.com/haproxy-k8s-sync/haproxy-k8s-sync/internal/desired"
)

func TestRelevant(t *testing.T) {
	meta := func(rv string, gen int64) metav1.ObjectMeta {
		return metav1.ObjectMeta{Name: "a", Namespace: "default", UID: "u1", ResourceVersion: rv, Generation: gen,
			Labels: map[string]string{"app": "a"}, Annotations: map[string]string{"k": "v"}}
	}
	route := func(rv string, gen int64, edit func(*gwv1.HTTPRoute)) *gwv1.HTTPRoute {
		r := &gwv1.HTTPRoute{ObjectMeta: meta(rv, gen), Spec: gwv1.HTTPRouteSpec{Hostnames: []gwv1.Hostname{"a.example.com"}}}
		if edit != nil {
			edit(r)
		}
		return r
	}
	accepted := func(r *gwv1.HTTPRoute) {
		r.Status.Parents = []gwv1.RouteParentStatus{{ControllerName: "x", Conditions: []metav1.Condition{{Type: "Accepted", Status: "True"}}}}
	}
	gw := func(rv string, gen int64, addr string) *gwv1.Gateway {
		g := &gwv1.Gateway{ObjectMeta: meta(rv, gen)}
		g.Status.Conditions = []metav1.Condition{{Type: "Programmed", Status: metav1.ConditionStatus(rv)}}
		if addr != "" {
			g.Status.Addresses = []gwv1.GatewayStatusAddress{{Value: addr}}
		}
		return g
	}
	ing := func(rv string, gen int64, lb string) *netv1.Ingress {
		i := &netv1.Ingress{ObjectMeta: meta(rv, gen)}
		if lb != "" {
			i.Status.LoadBalancer.Ingress = []netv1.IngressLoadBalancerIngress{{IP: lb}}
		}
		return i
	}
	svc := func(rv, lb string) *corev1.Service {
		s := &corev1.Service{ObjectMeta: meta(rv, 0)}
		if lb != "" {
			s.Status.LoadBalancer.Ingress = []corev1.LoadBalancerIngress{{IP: lb}}
		}
		return s
	}
	now := metav1.Now()
	for _, tc := range []struct {
		name     string
		old, new any
		want     bool
	}{
		{"route: our status written", route("1", 1, nil), route("2", 1, accepted), false},
		{"route: managedFields or resourceVersion only", route("1", 1, nil), route("2", 1, func(r *gwv1.HTTPRoute) {
			r.ManagedFields = []metav1.ManagedFieldsEntry{{Manager: "m"}}
		}), false},
		{"route: a relist's copy", route("1", 1, nil), route("1", 1, nil), false},
		{"route: spec changed (generation)", route("1", 1, nil), route("2", 2, func(r *gwv1.HTTPRoute) { r.Spec.Hostnames = nil }), true},
		{"route: a label changed", route("1", 1, nil), route("2", 1, func(r *gwv1.HTTPRoute) { r.Labels = map[string]string{"app": "b"} }), true},
		{"route: an annotation added", route("1", 1, nil), route("2", 1, func(r *gwv1.HTTPRoute) { r.Annotations["x"] = "y" }), true},
		{"route: being deleted", route("1", 1, nil), route("2", 1, func(r *gwv1.HTTPRoute) { r.DeletionTimestamp = &now }), true},
		{"route: deleted and created again", route("1", 1, nil), route("2", 1, func(r *gwv1.HTTPRoute) { r.UID = "u2" }), true},
		{"gateway: conditions only", gw("1", 3, "192.0.2.1"), gw("2", 3, "192.0.2.1"), false},
		{"gateway: status.addresses (AddressPools read them)", gw("1", 3, ""), gw("2", 3, "192.0.2.1"), true},
		{"gateway: spec changed", gw("1", 3, ""), gw("2", 4, ""), true},
		{"gatewayclass: status only", &gwv1.GatewayClass{ObjectMeta: meta("1", 1)},
			&gwv1.GatewayClass{ObjectMeta: meta("2", 1), Status: gwv1.GatewayClassStatus{Conditions: []metav1.Condition{{Type: "Accepted"}}}}, false},
		{"referencegrant: metadata only", &gwv1beta1.ReferenceGrant{ObjectMeta: meta("1", 1)}, &gwv1beta1.ReferenceGrant{ObjectMeta: meta("2", 1)}, false},
		{"grpcroute: spec changed", &gwv1.GRPCRoute{ObjectMeta: meta("1", 1)}, &gwv1.GRPCRoute{ObjectMeta: meta("2", 2)}, true},
		{"tcproute: status only", &gwv1.TCPRoute{ObjectMeta: meta("1", 1)}, &gwv1.TCPRoute{ObjectMeta: meta("2", 1)}, false},
		{"ingress: our load balancer status written", ing("1", 1, ""), ing("2", 1, "192.0.2.1"), false},
		{"ingress: spec changed", ing("1", 1, ""), ing("2", 2, ""), true},
		// Kinds without a generation for their spec: any new version counts.
		{"service: status (the AddressPools read it)", svc("1", ""), svc("2", "192.0.2.1"), true},
		{"service: a relist's copy", svc("1", ""), svc("1", ""), false},
		{"secret: new data", &corev1.Secret{ObjectMeta: meta("1", 0)}, &corev1.Secret{ObjectMeta: meta("2", 0)}, true},
		{"endpointslice (desired.Slice): any update", &desired.Slice{}, &desired.Slice{}, true},
		{"a tombstone or other type", "x", "y", true},
		{"uid type check", &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{UID: types.UID("a"), ResourceVersion: "1"}},
			&corev1.Namespace{ObjectMeta: metav1.ObjectMeta{UID: types.UID("a"), ResourceVersion: "2"}}, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := Relevant(tc.old, tc.new); got != tc.want {
				t.Fatalf("Relevant = %v, want %v", got, tc.want)
			}
		})
	}
}
