package gateway

import (
	"fmt"
	"strings"
	"testing"

	gwv1 "sigs.k8s.io/gateway-api/apis/v1"
	gwv1beta1 "sigs.k8s.io/gateway-api/apis/v1beta1"
)

func httpsListener(name string, port int32, refs ...gwv1.SecretObjectReference) gwv1.Listener {
	l := listenerOf(name, gwv1.HTTPSProtocolType, port, "")
	l.TLS = &gwv1.ListenerTLSConfig{CertificateRefs: refs}
	return l
}

func secretRef(ns, name string) gwv1.SecretObjectReference {
	r := gwv1.SecretObjectReference{Name: gwv1.ObjectName(name)}
	if ns != "" {
		n := gwv1.Namespace(ns)
		r.Namespace = &n
	}
	return r
}

func httpRoute(ns, name string, parents ...gwv1.ParentReference) *gwv1.HTTPRoute {
	return &gwv1.HTTPRoute{ObjectMeta: meta(ns, name, 5), Spec: gwv1.HTTPRouteSpec{CommonRouteSpec: gwv1.CommonRouteSpec{ParentRefs: parents}}}
}

// HTTP listeners serve; HTTPS ones are status only, never Programmed
// (http.go).
func TestHTTPListenerStatus(t *testing.T) {
	secretGrant := &gwv1beta1.ReferenceGrant{ObjectMeta: meta("certs", "g", 0), Spec: gwv1beta1.ReferenceGrantSpec{
		From: []gwv1beta1.ReferenceGrantFrom{{Group: gwv1.GroupName, Kind: "Gateway", Namespace: "apps"}},
		To:   []gwv1beta1.ReferenceGrantTo{{Group: "", Kind: "Secret"}}}}
	for _, tc := range []struct {
		name     string
		listener gwv1.Listener
		change   func(in *Input)
		// The listener's Accepted, Programmed and ResolvedRefs.
		accepted, programmed, resolved string
		attached                       int32
	}{
		{name: "HTTP: accepted, counted, served", listener: listenerOf("web", gwv1.HTTPProtocolType, 80, ""),
			change: func(in *Input) {
				in.HTTPRoutes = []*gwv1.HTTPRoute{httpRoute("apps", "r1", parent("gw", "web")), httpRoute("apps", "r2", parent("gw", ""))}
			},
			accepted: "True/Accepted", programmed: "True/Programmed", resolved: "True/ResolvedRefs", attached: 2},
		{name: "HTTP on a TCP listener's port: protocol conflict", listener: listenerOf("web", gwv1.HTTPProtocolType, 9000, ""),
			accepted: "False/PortUnavailable", programmed: "False/Invalid", resolved: "True/ResolvedRefs"},
		{name: "HTTPS with its Secret", listener: httpsListener("web", 443, secretRef("", "cert")),
			change:   func(in *Input) { in.Secrets = []*Secret{{ObjectMeta: meta("apps", "cert", 0), ValidTLS: true}} },
			accepted: "True/Accepted", programmed: "False/Pending", resolved: "True/ResolvedRefs"},
		{name: "HTTPS, Secret missing", listener: httpsListener("web", 443, secretRef("", "cert")),
			accepted: "True/Accepted", programmed: "False/Invalid", resolved: "False/InvalidCertificateRef"},
		{name: "HTTPS, Secret malformed", listener: httpsListener("web", 443, secretRef("", "cert")),
			change:   func(in *Input) { in.Secrets = []*Secret{{ObjectMeta: meta("apps", "cert", 0)}} },
			accepted: "True/Accepted", programmed: "False/Invalid", resolved: "False/InvalidCertificateRef"},
		{name: "HTTPS, another namespace's Secret without a grant", listener: httpsListener("web", 443, secretRef("certs", "cert")),
			change:   func(in *Input) { in.Secrets = []*Secret{{ObjectMeta: meta("certs", "cert", 0), ValidTLS: true}} },
			accepted: "True/Accepted", programmed: "False/Invalid", resolved: "False/RefNotPermitted"},
		{name: "HTTPS, another namespace's Secret with a grant", listener: httpsListener("web", 443, secretRef("certs", "cert")),
			change: func(in *Input) {
				in.Secrets = []*Secret{{ObjectMeta: meta("certs", "cert", 0), ValidTLS: true}}
				in.Grants = []*gwv1beta1.ReferenceGrant{secretGrant}
			},
			accepted: "True/Accepted", programmed: "False/Pending", resolved: "True/ResolvedRefs"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			in := base()
			in.Gateways[0].Spec.Listeners = append(in.Gateways[0].Spec.Listeners, tc.listener)
			if tc.change != nil {
				tc.change(&in)
			}
			res := Compute(in, Options{UDP: true})
			ls := listenerStatus(res, "apps", "gw", "web")
			want(t, condOf(ls.Conditions, "Accepted"), tc.accepted)
			want(t, condOf(ls.Conditions, "Programmed"), tc.programmed)
			want(t, condOf(ls.Conditions, "ResolvedRefs"), tc.resolved)
			want(t, fmt.Sprint(ls.AttachedRoutes), fmt.Sprint(tc.attached))
			if len(ls.SupportedKinds) != 2 || *ls.SupportedKinds[0].Group != gwv1.GroupName || ls.SupportedKinds[0].Kind != KindHTTPRoute ||
				*ls.SupportedKinds[1].Group != gwv1.GroupName || ls.SupportedKinds[1].Kind != KindGRPCRoute {
				t.Errorf("supportedKinds %v, want HTTPRoute and GRPCRoute", ls.SupportedKinds)
			}
			// HTTP: an HTTP frontend and the routes' statuses; HTTPS:
			// no frontend on its port.
			if served := tc.listener.Protocol == gwv1.HTTPProtocolType && tc.attached > 0; served {
				if httpOf(res, fmt.Sprint(tc.listener.Port)) == nil {
					t.Error("no HTTP frontend")
				}
				want(t, routeCond(res, KindHTTPRoute, "apps", "r1", "Accepted"), "True/Accepted")
			} else {
				want(t, routesOfFrontend(res, fmt.Sprint(tc.listener.Port)), "no frontend")
			}
			// The TCP listener still serves, unless the HTTP one is on its
			// port (both conflicted).
			if tc.listener.Port != 9000 {
				want(t, routesOfFrontend(res, "9000"), "=gwt_apps_a_80:80,gwt_apps_b_80:20")
			}
		})
	}
}

// The GatewayClass claims the address features only when Gateways get
// their addresses from the pools.
func TestSupportedFeatures(t *testing.T) {
	for _, tc := range []struct {
		opts Options
		want string
	}{
		{Options{}, "BackendTLSPolicy GRPCRoute GRPCRouteNamedRouteRule Gateway GatewayBackendClientCertificate GatewayFrontendClientCertificateValidation GatewayFrontendClientCertificateValidationInsecureFallback GatewayHTTPListenerIsolation GatewayHTTPSListenerDetectMisdirectedRequests GatewayPort8080 HTTPRoute HTTPRoute303RedirectStatusCode HTTPRoute307RedirectStatusCode HTTPRoute308RedirectStatusCode " +
			"HTTPRouteBackendProtocolH2C HTTPRouteBackendProtocolWebSocket HTTPRouteBackendRequestHeaderModification HTTPRouteBackendTimeout HTTPRouteCORS HTTPRouteDestinationPortMatching HTTPRouteHostRewrite HTTPRouteMethodMatching HTTPRouteNamedRouteRule " +
			"HTTPRouteParentRefPort HTTPRoutePathRedirect HTTPRoutePathRewrite HTTPRoutePortRedirect HTTPRouteQueryParamMatching HTTPRouteRequestTimeout " +
			"HTTPRouteResponseHeaderModification HTTPRouteRetry HTTPRouteSchemeRedirect ListenerSet ReferenceGrant TCPRoute TLSRoute TLSRouteModeTerminate UDPRoute"},
		{Options{Pooled: true}, "BackendTLSPolicy GRPCRoute GRPCRouteNamedRouteRule Gateway GatewayAddressEmpty GatewayBackendClientCertificate GatewayFrontendClientCertificateValidation GatewayFrontendClientCertificateValidationInsecureFallback GatewayHTTPListenerIsolation GatewayHTTPSListenerDetectMisdirectedRequests GatewayPort8080 GatewayStaticAddresses HTTPRoute HTTPRoute303RedirectStatusCode HTTPRoute307RedirectStatusCode HTTPRoute308RedirectStatusCode " +
			"HTTPRouteBackendProtocolH2C HTTPRouteBackendProtocolWebSocket HTTPRouteBackendRequestHeaderModification HTTPRouteBackendTimeout HTTPRouteCORS HTTPRouteDestinationPortMatching HTTPRouteHostRewrite HTTPRouteMethodMatching HTTPRouteNamedRouteRule " +
			"HTTPRouteParentRefPort HTTPRoutePathRedirect HTTPRoutePathRewrite HTTPRoutePortRedirect HTTPRouteQueryParamMatching HTTPRouteRequestTimeout " +
			"HTTPRouteResponseHeaderModification HTTPRouteRetry HTTPRouteSchemeRedirect ListenerSet ReferenceGrant TCPRoute TLSRoute TLSRouteModeTerminate UDPRoute"},
	} {
		var got []string
		for _, f := range Compute(base(), tc.opts).Classes["hks"].SupportedFeatures {
			got = append(got, string(f.Name))
		}
		want(t, strings.Join(got, " "), tc.want)
	}
}
