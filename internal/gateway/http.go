package gateway

import (
	"slices"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	gwv1 "sigs.k8s.io/gateway-api/apis/v1"

	"github.com/haproxy-k8s-sync/haproxy-k8s-sync/internal/certs"
)

// HTTP listeners serve HTTPRoutes (httproute.go compiles them into the
// frontend's table). HTTPS listeners are validated and carry the listener
// status the spec asks for (supportedKinds HTTPRoute, attachedRoutes,
// certificateRefs resolved through ReferenceGrants), but bind nothing
// until TLS termination is served (httpsTLS): they are never Programmed
// meanwhile, and the routes attached only to them are Accepted but carry
// no traffic there. docs/gateway.md says so.

// KindHTTPRoute is the HTTPRoute kind.
const KindHTTPRoute = "HTTPRoute"

// Secret is what Compute reads of a Secret an HTTPS listener names:
// whether it holds a usable certificate and key (kubernetes.io/tls,
// tls.crt and tls.key that certs.Parse takes), why not (Problem), and,
// when it does, the checked bundle. The informer keeps nothing else of
// it (source.Gateway's transform).
type Secret struct {
	metav1.ObjectMeta
	ValidTLS bool
	Problem  string        // why not ValidTLS; never key material
	Bundle   *certs.Bundle // with ValidTLS, for a Secret a listener refers to (tls.go)
	// Auth is the key "auth" of a Secret not of type kubernetes.io/tls
	// (an htpasswd file: an Ingress's basic authentication), when it has
	// one of at most ingress.MaxAuthFile bytes.
	Auth []byte
	// CA is the key ca.crt of a Secret that has one, checked
	// (certs.CABundle): the CA bundle an Ingress's backend TLS verifies
	// its servers with (proxy-ssl-secret, secure-verify-ca-secret);
	// CAProblem says why a ca.crt is not one.
	CA        []byte
	CAProblem string
}

// statusOnly reports a listener of a protocol this controller does not
// serve but reports status for: HTTPS, until TLS termination is served.
func (l *listener) statusOnly() bool {
	return (l.spec.Protocol == gwv1.HTTPSProtocolType || l.terminates()) && l.tls == nil
}

// servesHTTP reports a listener served by an HTTP frontend: HTTP, or
// HTTPS with a certificate to serve (tls.go).
func (l *listener) servesHTTP() bool {
	return l.spec.Protocol == gwv1.HTTPProtocolType || (l.spec.Protocol == gwv1.HTTPSProtocolType && l.tls != nil)
}

// httpListener validates an HTTP or HTTPS listener's own fields.
func httpListener(l *listener) {
	if l.spec.Protocol != gwv1.HTTPSProtocolType {
		return
	}
	switch {
	case l.spec.TLS == nil:
		l.reject("UnsupportedValue", "an HTTPS listener needs tls.certificateRefs")
	case l.spec.TLS.Mode != nil && *l.spec.TLS.Mode != gwv1.TLSModeTerminate:
		l.reject("UnsupportedValue", "an HTTPS listener terminates TLS (tls.mode Terminate)")
	}
}

// certRefs checks an HTTPS listener's certificateRefs: core Secrets,
// another namespace's only with a ReferenceGrant there, holding a
// certificate and key. The first problem is the listener's ResolvedRefs
// reason.
func (w *world) certRefs(g *gwv1.Gateway, l *listener) {
	if !l.terminating() { // HTTPS, or TLS Terminate (tlsterminate.go)
		return
	}
	kind, home := l.owner(g) // listenerset.go: a ListenerSet's entry refers as the ListenerSet
	for _, ref := range l.spec.TLS.CertificateRefs {
		k := Key{home, string(ref.Name)}
		if ref.Namespace != nil {
			k.Namespace = string(*ref.Namespace)
		}
		switch {
		case (ref.Group != nil && *ref.Group != "" && *ref.Group != "core") || (ref.Kind != nil && *ref.Kind != "Secret"):
			l.certWhy, l.certMsg = "InvalidCertificateRef", "certificateRefs may only name Secrets"
		case k.Namespace != home && !w.grantedTo(kind, home, "Secret", k):
			l.certWhy, l.certMsg = "RefNotPermitted", "no ReferenceGrant in "+k.Namespace+" allows "+kind+"s from "+home+" to Secret "+k.Name
		case w.secrets[k] == nil:
			l.certWhy, l.certMsg = "InvalidCertificateRef", "Secret "+k.String()+" not found"
		case !w.secrets[k].ValidTLS:
			l.certWhy, l.certMsg = "InvalidCertificateRef", "Secret "+k.String()+" holds no valid tls.crt and tls.key"
			if p := w.secrets[k].Problem; p != "" {
				l.certMsg += ": " + p
			}
		default:
			continue
		}
		return
	}
}

// secretGranted reports whether a ReferenceGrant in the Secret's
// namespace lets Gateway g refer to it.
func (w *world) secretGranted(g *gwv1.Gateway, secret Key) bool {
	return w.grantedTo("Gateway", g.Namespace, "Secret", secret)
}

// grantedTo reports whether a ReferenceGrant in obj's namespace lets
// objects of kind from (of the Gateway API group) in namespace ns refer
// to that core object of kind to.
func (w *world) grantedTo(from, ns string, to gwv1.Kind, obj Key) bool {
	for _, rg := range w.grants[obj.Namespace] {
		ok := false
		for _, f := range rg.Spec.From {
			if f.Group == gwv1.GroupName && string(f.Kind) == from && string(f.Namespace) == ns {
				ok = true
			}
		}
		if !ok {
			continue
		}
		for _, t := range rg.Spec.To {
			if (t.Group == "" || t.Group == "core") && t.Kind == to && (t.Name == nil || string(*t.Name) == obj.Name) {
				return true
			}
		}
	}
	return false
}

// httpRoutes are the HTTPRoutes as routes: their backendRefs, all rules'
// (for ResolvedRefs), and why one cannot be served.
// With the changed ones told (routechanges.go), the last pass's and those.
func httpRoutes(out []*route, in Input, m *Memo) []*route {
	if m == nil {
		for _, r := range in.HTTPRoutes {
			out = append(out, httpRouteOf(r))
		}
		return out
	}
	if out, ok := m.toldRoutes(out, in); ok {
		return out
	}
	m.Walked++
	out = slices.Grow(out, len(in.HTTPRoutes))
	start := len(out)
	for _, r := range in.HTTPRoutes {
		out = append(out, m.httpRoute(r, httpRouteOf))
	}
	m.keepHTTP(out[start:])
	return out
}

// httpRouteOf is HTTPRoute r as a route.
func httpRouteOf(r *gwv1.HTTPRoute) *route {
	rt := &route{key: RouteKey{KindHTTPRoute, Key{r.Namespace, r.Name}}, meta: &r.ObjectMeta,
		parents: r.Spec.ParentRefs, hostnames: r.Spec.Hostnames, http: r, invalid: checkHTTPRoute(r)}
	for _, rule := range r.Spec.Rules {
		for _, b := range rule.BackendRefs {
			rt.refs = append(rt.refs, b.BackendRef)
		}
	}
	return rt
}
