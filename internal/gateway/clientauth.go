package gateway

import (
	"strconv"

	gwv1 "sigs.k8s.io/gateway-api/apis/v1"

	"github.com/haproxy-k8s-sync/haproxy-k8s-sync/internal/model"
)

// Client certificate validation on HTTPS listeners (a Gateway's
// spec.tls.frontend: the default, or the perPort entry of the listener's
// port): the HTTPS frontend of that port asks clients for a certificate
// and verifies it against the CA bundle of the validation's
// caCertificateRefs (ConfigMaps, key ca.crt; another namespace's only
// through a ReferenceGrant to the Gateway), model.ClientAuth rendered on
// its bind lines (render/clientauth.go). AllowValidOnly (the default)
// refuses the handshake of a client without a valid certificate;
// AllowInsecureFallback asks for one but lets every client through, and
// the Gateway carries InsecureFrontendValidationMode.
//
// A ref that does not resolve leaves the HTTPS listeners of the port
// with ResolvedRefs False (InvalidCACertificateRef,
// InvalidCACertificateKind or RefNotPermitted). When none resolves they
// are not accepted (NoValidCACertificate) and bind nothing, rather than
// serve without verifying, unless the port was verified with a valid
// bundle before: that bundle is then kept (CAMemo), the listener
// served, and ResolvedRefs says so. The bundle's file is named for the
// Gateway and port: a CA that changes is the same file with other
// contents, committed through the Runtime API with no reload (cafile.go;
// the bind sends no CA names, render/clientauth.go says why).

// frontendFeatures are the features of frontend client certificate
// validation the GatewayClass claims (compute.go), once their upstream
// tests pass.
var frontendFeatures = []gwv1.FeatureName{"GatewayFrontendClientCertificateValidation",
	"GatewayFrontendClientCertificateValidationInsecureFallback"}

// clientKey is one port of a Gateway, the scope of a validation.
type clientKey struct {
	gw   Key
	port uint16
}

// beginClients starts a pass of the client CAs' memory; endClients
// keeps what the pass used.
func (m *CAMemo) beginClients() {
	if m != nil {
		m.clientsNext = map[clientKey]*model.ClientAuth{}
	}
}

func (m *CAMemo) endClients() {
	if m != nil {
		m.clients, m.clientsNext = m.clientsNext, nil
	}
}

// frontendValidation is the validation g asks of its HTTPS listeners on
// port: the perPort entry's, else the default's; nil for none.
func frontendValidation(g *gwv1.Gateway, port uint16) *gwv1.FrontendTLSValidation {
	if g.Spec.TLS == nil || g.Spec.TLS.Frontend == nil {
		return nil
	}
	f := g.Spec.TLS.Frontend
	for _, p := range f.PerPort {
		if uint16(p.Port) == port {
			return p.TLS.Validation
		}
	}
	return f.Default.Validation
}

// clientAuth resolves the client certificate validation of HTTPS
// listener l of g into l.tls.Client, its problems into the listener's
// ResolvedRefs (certWhy, after a certificate's own problem) and, when no
// CA bundle is left to verify against, its Accepted.
func (w *world) clientAuth(g *gwv1.Gateway, l *listener, memo *CAMemo) {
	if l.spec.Protocol != gwv1.HTTPSProtocolType || !l.accepted {
		return
	}
	v := frontendValidation(g, l.port)
	if v == nil {
		return
	}
	var bundle []byte
	var why, msg string
	for _, ref := range v.CACertificateRefs {
		k := Key{g.Namespace, string(ref.Name)}
		if ref.Namespace != nil {
			k.Namespace = string(*ref.Namespace)
		}
		var rwhy, rmsg string
		switch {
		case ref.Group != "" && ref.Group != "core" || ref.Kind != "ConfigMap":
			rwhy, rmsg = string(gwv1.ListenerReasonInvalidCACertificateKind), "caCertificateRefs: only ConfigMaps are read, not "+string(ref.Kind)
		case k.Namespace != g.Namespace && !w.grantedTo("Gateway", g.Namespace, "ConfigMap", k):
			rwhy, rmsg = string(gwv1.ListenerReasonRefNotPermitted), "no ReferenceGrant in "+k.Namespace+" allows Gateways from "+g.Namespace+" to ConfigMap "+k.Name
		default:
			pem, bad := caBundle(w.configMaps[k]) // backendtls.go
			if bad == "" {
				bundle = append(bundle, pem...)
				continue
			}
			rwhy, rmsg = string(gwv1.ListenerReasonInvalidCACertificateRef), "ConfigMap "+k.String()+": "+bad
		}
		if why == "" {
			why, msg = rwhy, rmsg
		}
	}
	key := clientKey{Key{g.Namespace, g.Name}, l.port}
	var a *model.ClientAuth
	if len(bundle) > 0 {
		// Named for the port: another bundle is committed to the same
		// file at runtime (cafile.go).
		a = &model.ClientAuth{CA: model.Name("cca", g.Namespace, g.Name, strconv.Itoa(int(l.port))), CAPEM: bundle}
	} else if memo != nil && memo.clients[key] != nil {
		c := *memo.clients[key]
		a = &c
		msg += "; the port's last valid CA bundle is still verified against"
	}
	if why != "" && l.certWhy == "" {
		l.certWhy, l.certMsg = why, msg
	}
	if a == nil {
		l.reject(string(gwv1.ListenerReasonNoValidCACertificate), "no caCertificateRef of the client certificate validation resolves: "+msg)
		l.tls = nil
		return
	}
	a.Optional = v.Mode == gwv1.AllowInsecureFallback
	if memo != nil {
		memo.clientsNext[key] = a
	}
	if l.tls != nil {
		l.tls.Client = a
	}
}

// frontendStatus adds InsecureFrontendValidationMode to st when g lets
// clients through without a valid certificate on some port.
func frontendStatus(g *gwv1.Gateway, st *gwv1.GatewayStatus) {
	if g.Spec.TLS == nil || g.Spec.TLS.Frontend == nil {
		return
	}
	f := g.Spec.TLS.Frontend
	insecure := f.Default.Validation != nil && f.Default.Validation.Mode == gwv1.AllowInsecureFallback
	for _, p := range f.PerPort {
		insecure = insecure || p.TLS.Validation != nil && p.TLS.Validation.Mode == gwv1.AllowInsecureFallback
	}
	if insecure {
		st.Conditions = append(st.Conditions, cond(string(gwv1.GatewayConditionInsecureFrontendValidationMode), true,
			string(gwv1.GatewayReasonConfigurationChanged), "a client certificate validation is AllowInsecureFallback: clients without a valid certificate are let through", g.Generation))
	}
}
