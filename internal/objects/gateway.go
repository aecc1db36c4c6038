package objects

import (
	"fmt"

	gwv1 "sigs.k8s.io/gateway-api/apis/v1"
	gwv1beta1 "sigs.k8s.io/gateway-api/apis/v1beta1"
)

// The Gateway API objects render reads (render of a gateway-mode model):
// GatewayClasses, Gateways, HTTPRoutes and GRPCRoutes of gateway.networking.k8s.io/v1,
// ReferenceGrants of v1beta1 (or v1).

// GatewaySet holds them, beside the Services and EndpointSlices of Set.
type GatewaySet struct {
	GatewayClasses  []*gwv1.GatewayClass
	Gateways        []*gwv1.Gateway
	HTTPRoutes      []*gwv1.HTTPRoute
	GRPCRoutes      []*gwv1.GRPCRoute
	ReferenceGrants []*gwv1beta1.ReferenceGrant
}

// Gatewayed reports whether s holds Gateway API objects.
func (s *Set) Gatewayed() bool {
	return len(s.Gateways)+len(s.HTTPRoutes)+len(s.GRPCRoutes)+len(s.GatewayClasses)+len(s.ReferenceGrants) > 0
}

func gatewayKind(kind string) bool {
	switch kind {
	case "GatewayClass", "Gateway", "HTTPRoute", "GRPCRoute", "ReferenceGrant":
		return true
	}
	return false
}

// gateway decodes a Gateway API object (h, its version checked) into l's
// set; false when the kind is not one render reads.
func (l *loader) gateway(d decoding, ns, version string) bool {
	h, fail := d.h, d.fail
	want := "v1"
	if h.Kind == "ReferenceGrant" && version == "v1beta1" {
		want = "v1beta1"
	}
	if !gatewayKind(h.Kind) {
		return false
	}
	if version != want {
		fail(h, ErrVersion, fmt.Errorf("want %s/v1, got %q", GatewayGroup, h.APIVersion))
		return true
	}
	switch h.Kind {
	case "GatewayClass":
		decodeInto(d, "", &l.set.GatewayClasses)
	case "Gateway":
		decodeInto(d, ns, &l.set.Gateways)
	case "HTTPRoute":
		decodeInto(d, ns, &l.set.HTTPRoutes)
	case "GRPCRoute":
		decodeInto(d, ns, &l.set.GRPCRoutes)
	case "ReferenceGrant":
		decodeInto(d, ns, &l.set.ReferenceGrants)
	}
	return true
}

// mergeGateway is Merge for the Gateway API objects.
func (s *Set) mergeGateway(o Set, keep func(kind, ns, name string) bool) {
	mergeInto(&s.GatewayClasses, o.GatewayClasses, "GatewayClass", false, keep)
	mergeInto(&s.Gateways, o.Gateways, "Gateway", true, keep)
	mergeInto(&s.HTTPRoutes, o.HTTPRoutes, "HTTPRoute", true, keep)
	mergeInto(&s.GRPCRoutes, o.GRPCRoutes, "GRPCRoute", true, keep)
	mergeInto(&s.ReferenceGrants, o.ReferenceGrants, "ReferenceGrant", true, keep)
}
