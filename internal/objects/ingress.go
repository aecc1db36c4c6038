package objects

import (
	"fmt"

	corev1 "k8s.io/api/core/v1"
	netv1 "k8s.io/api/networking/v1"
)

// The Ingress objects render reads (render of the Ingress source, run
// --mode=gateway --ingress-class): IngressClasses and Ingresses of
// networking.k8s.io/v1, Secrets (v1) for their certificates, and
// ConfigMaps (v1) for their custom-headers.

// IngressSet holds them, beside the Services and EndpointSlices of Set.
type IngressSet struct {
	IngressClasses []*netv1.IngressClass
	Ingresses      []*netv1.Ingress
	Secrets        []*corev1.Secret
	ConfigMaps     []*corev1.ConfigMap
}

func ingressKind(kind string) bool {
	switch kind {
	case "IngressClass", "Ingress", "Secret", "ConfigMap":
		return true
	}
	return false
}

// ingress decodes an Ingress object into l's set; false when h is not
// one render reads.
func (l *loader) ingress(d decoding, ns, group, version string) bool {
	h, fail := d.h, d.fail
	want := netv1.GroupName
	if h.Kind == "Secret" || h.Kind == "ConfigMap" {
		want = ""
	}
	if !ingressKind(h.Kind) || group != want {
		return false
	}
	if version != "v1" {
		fail(h, ErrVersion, fmt.Errorf("want v1 of %q, got %q", want, h.APIVersion))
		return true
	}
	switch h.Kind {
	case "IngressClass":
		decodeInto(d, "", &l.set.IngressClasses)
	case "Ingress":
		decodeInto(d, ns, &l.set.Ingresses)
	case "Secret":
		decodeInto(d, ns, &l.set.Secrets)
	case "ConfigMap":
		decodeInto(d, ns, &l.set.ConfigMaps)
	}
	return true
}

// Ingressed reports whether s holds Ingress objects.
func (s *Set) Ingressed() bool { return len(s.Ingresses)+len(s.IngressClasses) > 0 }

// mergeIngress is Merge for the Ingress objects.
func (s *Set) mergeIngress(o Set, keep func(kind, ns, name string) bool) {
	mergeInto(&s.IngressClasses, o.IngressClasses, "IngressClass", false, keep)
	mergeInto(&s.Ingresses, o.Ingresses, "Ingress", true, keep)
	mergeInto(&s.Secrets, o.Secrets, "Secret", true, keep)
	mergeInto(&s.ConfigMaps, o.ConfigMaps, "ConfigMap", true, keep)
}
