package objects

import (
	"encoding/json"
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
func (l *loader) gateway(h *header, raw []byte, ns, version string, first func(kind, ns, name string) bool, fail func(*header, error, error)) bool {
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
	decode := func(o any) bool {
		if err := json.Unmarshal(raw, o); err != nil {
			fail(h, ErrDecode, err)
			return false
		}
		return true
	}
	switch h.Kind {
	case "GatewayClass":
		var o gwv1.GatewayClass
		if decode(&o) && first(h.Kind, "", o.Name) {
			l.set.GatewayClasses = append(l.set.GatewayClasses, &o)
		}
	case "Gateway":
		var o gwv1.Gateway
		if decode(&o) && first(h.Kind, ns, o.Name) {
			o.Namespace = ns
			l.set.Gateways = append(l.set.Gateways, &o)
		}
	case "HTTPRoute":
		var o gwv1.HTTPRoute
		if decode(&o) && first(h.Kind, ns, o.Name) {
			o.Namespace = ns
			l.set.HTTPRoutes = append(l.set.HTTPRoutes, &o)
		}
	case "GRPCRoute":
		var o gwv1.GRPCRoute
		if decode(&o) && first(h.Kind, ns, o.Name) {
			o.Namespace = ns
			l.set.GRPCRoutes = append(l.set.GRPCRoutes, &o)
		}
	case "ReferenceGrant":
		var o gwv1beta1.ReferenceGrant
		if decode(&o) && first(h.Kind, ns, o.Name) {
			o.Namespace = ns
			l.set.ReferenceGrants = append(l.set.ReferenceGrants, &o)
		}
	}
	return true
}

// mergeGateway is Merge for the Gateway API objects.
func (s *Set) mergeGateway(o Set, keep func(kind, ns, name string) bool) {
	for _, x := range o.GatewayClasses {
		if keep("GatewayClass", "", x.Name) {
			s.GatewayClasses = append(s.GatewayClasses, x)
		}
	}
	for _, x := range o.Gateways {
		if keep("Gateway", x.Namespace, x.Name) {
			s.Gateways = append(s.Gateways, x)
		}
	}
	for _, x := range o.HTTPRoutes {
		if keep("HTTPRoute", x.Namespace, x.Name) {
			s.HTTPRoutes = append(s.HTTPRoutes, x)
		}
	}
	for _, x := range o.GRPCRoutes {
		if keep("GRPCRoute", x.Namespace, x.Name) {
			s.GRPCRoutes = append(s.GRPCRoutes, x)
		}
	}
	for _, x := range o.ReferenceGrants {
		if keep("ReferenceGrant", x.Namespace, x.Name) {
			s.ReferenceGrants = append(s.ReferenceGrants, x)
		}
	}
}
