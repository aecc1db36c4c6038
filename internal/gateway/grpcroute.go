package gateway

import (
	"regexp"
	"strconv"

	gwv1 "sigs.k8s.io/gateway-api/apis/v1"
)

// GRPCRoutes are served on HTTP listeners beside HTTPRoutes: gRPC is
// HTTP/2 whose path is /service/method, so a GRPCRoute is compiled into
// the HTTPRoute it means (asHTTPRoute) and from there into the same
// table, the same precedence and the same maps (httproute.go). No rule
// of the data path is gRPC's own but one: a GRPCRoute's backends speak
// HTTP/2 in clear (h2c) whatever their Service port's appProtocol says
// (weighted, serve.go). docs/gateway.md, "GRPCRoute".

// grpcFeatures are the GRPCRoute features the GatewayClass claims
// (compute.go), each only once the upstream conformance tests for it
// pass (GATEWAY-GRPC in test/conformance).
var grpcFeatures = []gwv1.FeatureName{"GRPCRoute", "GRPCRouteNamedRouteRule"}

// KindGRPCRoute is the GRPCRoute kind.
const KindGRPCRoute = "GRPCRoute"

// The names a gRPC method match may hold, as the GRPCRoute CRD's
// validation has them (checked here too: render reads files the
// apiserver never validated); neither can carry a slash, a space or
// HAProxy syntax into the path they become.
var (
	grpcService = regexp.MustCompile(`^(?i)\.?[a-z_][a-z_0-9]*(\.[a-z_][a-z_0-9]*)*$`)
	grpcMethod  = regexp.MustCompile(`^[A-Za-z_][A-Za-z_0-9]*$`)
)

// grpcRoutes are the GRPCRoutes as routes, each with its rules as an
// HTTPRoute's, or why it cannot be served.
// A route refused after it was valid keeps serving its last valid
// rules (memo, routememo.go).
func grpcRoutes(in Input, memo *RouteMemo) []*route {
	out := make([]*route, 0, len(in.GRPCRoutes))
	for _, r := range in.GRPCRoutes {
		rt := &route{key: RouteKey{KindGRPCRoute, Key{r.Namespace, r.Name}}, meta: &r.ObjectMeta,
			parents: r.Spec.ParentRefs, hostnames: r.Spec.Hostnames}
		rt.http, rt.invalid = asHTTPRoute(r)
		rt.http, rt.kept = memo.rules(rt.key, rt.http)
		if rt.kept {
			// Served where the route now attaches (its parents and
			// hostnames), with the kept rules and their backends.
			for _, rule := range rt.http.Spec.Rules {
				for _, b := range rule.BackendRefs {
					rt.refs = append(rt.refs, b.BackendRef)
				}
			}
		} else {
			for _, rule := range r.Spec.Rules {
				for _, b := range rule.BackendRefs {
					rt.refs = append(rt.refs, b.BackendRef)
				}
			}
		}
		out = append(out, rt)
	}
	return out
}

// asHTTPRoute is the HTTPRoute a GRPCRoute means, or why it cannot be
// served: a method match the table cannot express, a filter it does not
// take, or what checkHTTPRoute refuses in the HTTPRoute.
func asHTTPRoute(r *gwv1.GRPCRoute) (*gwv1.HTTPRoute, string) {
	h := &gwv1.HTTPRoute{ObjectMeta: r.ObjectMeta}
	h.Spec.CommonRouteSpec, h.Spec.Hostnames = r.Spec.CommonRouteSpec, r.Spec.Hostnames
	for ri, rule := range r.Spec.Rules {
		at := "rules[" + strconv.Itoa(ri) + "]"
		hr := gwv1.HTTPRouteRule{Name: rule.Name}
		for mi, m := range rule.Matches {
			hm, why := grpcMatch(m)
			if why != "" {
				return nil, at + ".matches[" + strconv.Itoa(mi) + "]: " + why
			}
			hr.Matches = append(hr.Matches, hm)
		}
		var why string
		if hr.Filters, why = grpcFilters(rule.Filters); why != "" {
			return nil, at + "." + why
		}
		for bi, b := range rule.BackendRefs {
			hb := gwv1.HTTPBackendRef{BackendRef: b.BackendRef}
			if hb.Filters, why = grpcFilters(b.Filters); why != "" {
				return nil, at + ".backendRefs[" + strconv.Itoa(bi) + "]." + why
			}
			hr.BackendRefs = append(hr.BackendRefs, hb)
		}
		h.Spec.Rules = append(h.Spec.Rules, hr)
	}
	if why := checkHTTPRoute(h); why != "" {
		return nil, why
	}
	return h, ""
}

// grpcMatch is a GRPCRoute match as an HTTPRoute's: a service and a
// method, the Exact path /service/method; a service alone, the prefix
// /service (whole segments); headers as they are. A method without its service would
// need a path suffix, which the table does not match: refused.
func grpcMatch(m gwv1.GRPCRouteMatch) (gwv1.HTTPRouteMatch, string) {
	var hm gwv1.HTTPRouteMatch
	if mm := m.Method; mm != nil {
		switch {
		case mm.Type != nil && *mm.Type != gwv1.GRPCMethodMatchExact:
			return hm, "method match type " + string(*mm.Type) + " is not supported (Exact)"
		case mm.Service == nil || *mm.Service == "":
			return hm, "a method match without a service is not supported"
		case !grpcService.MatchString(*mm.Service):
			return hm, "service " + strconv.Quote(*mm.Service) + " is not a dotted name of letters, digits and _"
		case mm.Method != nil && *mm.Method != "" && !grpcMethod.MatchString(*mm.Method):
			return hm, "method " + strconv.Quote(*mm.Method) + " is not a name of letters, digits and _"
		case mm.Method != nil && *mm.Method != "":
			t, v := gwv1.PathMatchExact, "/"+*mm.Service+"/"+*mm.Method
			hm.Path = &gwv1.HTTPPathMatch{Type: &t, Value: &v}
		default:
			t, v := gwv1.PathMatchPathPrefix, "/"+*mm.Service
			hm.Path = &gwv1.HTTPPathMatch{Type: &t, Value: &v}
		}
	}
	for _, h := range m.Headers {
		hh := gwv1.HTTPHeaderMatch{Name: gwv1.HTTPHeaderName(h.Name), Value: h.Value}
		if h.Type != nil {
			if *h.Type != gwv1.GRPCHeaderMatchExact {
				return hm, "header match type " + string(*h.Type) + " is not supported (Exact)"
			}
			t := gwv1.HeaderMatchExact
			hh.Type = &t
		}
		hm.Headers = append(hm.Headers, hh)
	}
	return hm, ""
}

// grpcFilters are GRPCRoute filters as HTTPRoute ones: the header
// modifiers (checked by checkHTTPRoute as an HTTPRoute's); mirroring and
// extensions are not served.
func grpcFilters(fs []gwv1.GRPCRouteFilter) ([]gwv1.HTTPRouteFilter, string) {
	var out []gwv1.HTTPRouteFilter
	for fi, f := range fs {
		switch f.Type {
		case gwv1.GRPCRouteFilterRequestHeaderModifier:
			out = append(out, gwv1.HTTPRouteFilter{Type: gwv1.HTTPRouteFilterRequestHeaderModifier, RequestHeaderModifier: f.RequestHeaderModifier})
		case gwv1.GRPCRouteFilterResponseHeaderModifier:
			out = append(out, gwv1.HTTPRouteFilter{Type: gwv1.HTTPRouteFilterResponseHeaderModifier, ResponseHeaderModifier: f.ResponseHeaderModifier})
		default:
			return nil, "filters[" + strconv.Itoa(fi) + "]: filter type " + string(f.Type) + " is not supported (RequestHeaderModifier, ResponseHeaderModifier)"
		}
	}
	return out, ""
}
