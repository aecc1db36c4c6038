package source

import (
	"strings"

	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/haproxy-k8s-sync/haproxy-k8s-sync/internal/desired"
	"github.com/haproxy-k8s-sync/haproxy-k8s-sync/internal/settings"
)

// Slim is the informers' transform: it replaces each object by a copy that
// holds only what the desired package reads (and what an Event needs), so
// the caches stay small at tens of thousands of objects. EndpointSlices
// become *desired.Slice.
func Slim(obj any) (any, error) {
	switch o := obj.(type) {
	case *corev1.Service:
		internService(o)
		return &corev1.Service{
			TypeMeta:   o.TypeMeta,
			ObjectMeta: slimMeta(o.ObjectMeta, ourAnnotations(o.Annotations), o.Labels), // labels: AddressPools' serviceSelector
			Spec: corev1.ServiceSpec{
				Type:                  o.Spec.Type,
				Ports:                 o.Spec.Ports,
				LoadBalancerClass:     o.Spec.LoadBalancerClass,
				ExternalTrafficPolicy: o.Spec.ExternalTrafficPolicy,
				HealthCheckNodePort:   o.Spec.HealthCheckNodePort, // --local-check
				// Enforced by the model: who may connect, and client affinity.
				LoadBalancerSourceRanges: o.Spec.LoadBalancerSourceRanges,
				SessionAffinity:          o.Spec.SessionAffinity,
				SessionAffinityConfig:    o.Spec.SessionAffinityConfig,
				// What a Service asks of the AddressPools.
				IPFamilies:     o.Spec.IPFamilies,
				IPFamilyPolicy: o.Spec.IPFamilyPolicy,
				LoadBalancerIP: o.Spec.LoadBalancerIP,
				// An Ingress's service-upstream (ingress/upstream.go).
				ClusterIP: o.Spec.ClusterIP,
				// false: no nodePort, so pod targets (desired.podTargets).
				AllocateLoadBalancerNodePorts: o.Spec.AllocateLoadBalancerNodePorts,
			},
			// The conditions we write (the Announced condition: the
			// writer compares them and the generation with what it
			// would write); others' are none of ours.
			Status: corev1.ServiceStatus{LoadBalancer: o.Status.LoadBalancer, Conditions: ourConditions(o.Status.Conditions)},
		}, nil
	case *corev1.Namespace:
		return &corev1.Namespace{TypeMeta: o.TypeMeta, ObjectMeta: slimMeta(o.ObjectMeta, nil, o.Labels)}, nil
	case *discoveryv1.EndpointSlice:
		// The largest cache by far: kept as the desired package's compact
		// form (about a quarter of a trimmed EndpointSlice).
		return desired.SliceOf(o), nil
	case *corev1.Node:
		var lbl map[string]string
		if v, ok := o.Labels[desired.ExcludeLabel]; ok {
			lbl = map[string]string{desired.ExcludeLabel: v}
		}
		var conds []corev1.NodeCondition
		for _, c := range o.Status.Conditions {
			if c.Type == corev1.NodeReady {
				conds = []corev1.NodeCondition{{Type: c.Type, Status: c.Status}}
			}
		}
		return &corev1.Node{
			TypeMeta:   o.TypeMeta,
			ObjectMeta: slimMeta(o.ObjectMeta, nil, lbl),
			Status:     corev1.NodeStatus{Addresses: o.Status.Addresses, Conditions: conds},
		}, nil
	}
	return obj, nil // tombstones and anything else pass through
}

func slimMeta(m metav1.ObjectMeta, ann, lbl map[string]string) metav1.ObjectMeta {
	return metav1.ObjectMeta{
		Name:              m.Name,
		Namespace:         m.Namespace,
		UID:               m.UID,
		ResourceVersion:   m.ResourceVersion,
		Generation:        m.Generation, // a condition's observedGeneration
		CreationTimestamp: m.CreationTimestamp,
		Annotations:       ann,
		Labels:            lbl,
	}
}

func ourAnnotations(a map[string]string) map[string]string {
	var out map[string]string
	for k, v := range a {
		if strings.HasPrefix(k, settings.Prefix) || k == settings.SourceRangesAnnotation {
			if out == nil {
				out = make(map[string]string)
			}
			out[k] = v
		}
	}
	return out
}

func ourConditions(cs []metav1.Condition) []metav1.Condition {
	var out []metav1.Condition
	for _, c := range cs {
		if strings.HasPrefix(c.Type, settings.Prefix) {
			out = append(out, c)
		}
	}
	return out
}

// internService shares, between the cached Services, the bytes of the
// strings most of them repeat (the decoder gives each object its own
// copy): the namespace, type, policies, IP families, class, ports' names
// and protocols, and the status's IP mode; ~80 B a Service of the ~740
// a slim one keeps (BenchmarkServiceCacheKept, issue 29's peak). In
// place: o is the object just decoded, which Slim replaces.
func internService(o *corev1.Service) {
	o.Namespace = str(o.Namespace)
	sp := &o.Spec
	sp.Type, sp.ExternalTrafficPolicy, sp.SessionAffinity = str(sp.Type), str(sp.ExternalTrafficPolicy), str(sp.SessionAffinity)
	strp(sp.LoadBalancerClass)
	strp(sp.IPFamilyPolicy)
	for i := range sp.IPFamilies {
		sp.IPFamilies[i] = str(sp.IPFamilies[i])
	}
	for i := range sp.Ports {
		p := &sp.Ports[i]
		p.Name, p.Protocol = str(p.Name), str(p.Protocol)
		if p.AppProtocol != nil {
			strp(p.AppProtocol)
		}
	}
	for i := range o.Status.LoadBalancer.Ingress {
		strp(o.Status.LoadBalancer.Ingress[i].IPMode)
	}
}
