package source

import (
	"maps"

	netv1 "k8s.io/api/networking/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	gwv1 "sigs.k8s.io/gateway-api/apis/v1"
	gwv1beta1 "sigs.k8s.io/gateway-api/apis/v1beta1"
)

// Relevant reports whether an informer's update from old to new changes
// anything a pass reads. Each status the controllers write (a route's
// parents, a Gateway's conditions, an Ingress's load balancer) comes back
// through the informer as an update; so do managedFields and
// resourceVersion changes, and a relist's unchanged objects. None of them
// changes the model, and at thousands of routes each whole pass they
// would trigger costs as much as the change that caused them (issue 30).
//
// The rule, per kind:
//   - any kind: the same resourceVersion (a relist's copy) is no change;
//     another UID (deleted and created again) always is;
//   - the kinds whose spec changes raise metadata.generation (the Gateway
//     API's, whose CRDs have a status subresource, and Ingresses): a
//     change when the generation, labels, annotations or deletion
//     timestamp differ, or the part of the status a pass reads does (a
//     Gateway's status.addresses: the AddressPools keep them,
//     pools.GatewayRequest); a change of status alone is none;
//   - every other kind (Services, EndpointSlices, Secrets, ConfigMaps,
//     Namespaces, Nodes, AddressPools, ...): any other resourceVersion is
//     a change (a Service's status is read: the AddressPools' stable
//     assignments).
func Relevant(old, new any) bool {
	o, ok := old.(metav1.Object)
	n, ok2 := new.(metav1.Object)
	if !ok || !ok2 || o.GetUID() != n.GetUID() {
		return true
	}
	if rv := o.GetResourceVersion(); rv != "" && rv == n.GetResourceVersion() {
		return false
	}
	statusChanged, generational := statusRead(old, new)
	if !generational {
		return true
	}
	return statusChanged || o.GetGeneration() != n.GetGeneration() ||
		!maps.Equal(o.GetLabels(), n.GetLabels()) || !maps.Equal(o.GetAnnotations(), n.GetAnnotations()) ||
		!o.GetDeletionTimestamp().Equal(n.GetDeletionTimestamp())
}

// statusRead reports whether old's kind raises its generation on every
// spec change (generational) and, if so, whether the part of its status a
// pass reads differs between old and new.
func statusRead(old, new any) (changed, generational bool) {
	switch o := old.(type) {
	case *gwv1.Gateway:
		n, ok := new.(*gwv1.Gateway)
		return !ok || !equality.Semantic.DeepEqual(o.Status.Addresses, n.Status.Addresses), true
	case *gwv1.GatewayClass, *gwv1.HTTPRoute, *gwv1.GRPCRoute, *gwv1.TCPRoute, *gwv1.TLSRoute, *gwv1.UDPRoute,
		*gwv1beta1.ReferenceGrant, *gwv1.BackendTLSPolicy, *gwv1.ListenerSet, *netv1.Ingress:
		return false, true
	}
	return false, false
}
