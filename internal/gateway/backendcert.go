package gateway

import (
	gwv1 "sigs.k8s.io/gateway-api/apis/v1"

	"github.com/haproxy-k8s-sync/haproxy-k8s-sync/internal/model"
)

// The Gateway's backend client certificate (spec.tls.backend
// .clientCertificateRef, GatewayBackendClientCertificate): a
// kubernetes.io/tls Secret whose certificate and key HAProxy presents to
// the servers of every backend that speaks TLS (BackendTLSPolicy) for this
// Gateway's routes (`crt` on the server lines). The file is named for the
// Secret, and a backend presenting one carries its name, so backends of
// Gateways with other certificates are apart; a rotation keeps the name
// and the local driver commits the new certificate to the file through
// the Runtime API, with no reload (runtimeapi/clientcerts.go). A Secret that
// does not resolve leaves the Gateway's ResolvedRefs False
// (InvalidClientCertificateRef, or RefNotPermitted across namespaces
// without a ReferenceGrant) and its TLS backends present nothing; a
// Secret served once and turned bad keeps its last valid bundle (the
// listeners' CertMemo).

// clientCert is a Gateway's backend client certificate as resolved.
type clientCert struct {
	name string // model.BackendTLS.Cert; "": none
	pem  []byte
	why  string // ResolvedRefs False's reason; "": resolved (or none asked)
	msg  string
}

// backendCertRef is the Secret g's backend client certificate names.
func backendCertRef(g *gwv1.Gateway) (Key, bool) {
	if g.Spec.TLS == nil || g.Spec.TLS.Backend == nil || g.Spec.TLS.Backend.ClientCertificateRef == nil {
		return Key{}, false
	}
	return certSecret(g, *g.Spec.TLS.Backend.ClientCertificateRef)
}

// backendCertSecrets adds to out the Secrets gws's backend client
// certificates name (CertSecrets: the source keeps their bundles).
func backendCertSecrets(gws []*gwv1.Gateway, out map[Key]bool) {
	for _, g := range gws {
		if k, ok := backendCertRef(g); ok {
			out[k] = true
		}
	}
}

// clientCertOf resolves g's backend client certificate (once a pass).
func (w *world) clientCertOf(g *gwv1.Gateway) *clientCert {
	k := Key{g.Namespace, g.Name}
	if c, ok := w.clientCerts[k]; ok {
		return c
	}
	c := &clientCert{}
	w.clientCerts[k] = c
	if g.Spec.TLS == nil || g.Spec.TLS.Backend == nil || g.Spec.TLS.Backend.ClientCertificateRef == nil {
		return c
	}
	s, ok := backendCertRef(g)
	switch {
	case !ok:
		c.why, c.msg = string(gwv1.GatewayReasonInvalidClientCertificateRef), "clientCertificateRef must name a core Secret"
		return c
	case s.Namespace != g.Namespace && !w.secretGranted(g, s):
		c.why, c.msg = string(gwv1.GatewayReasonRefNotPermitted), "no ReferenceGrant lets this Gateway use Secret "+s.String()
		return c
	}
	b := w.certMemo.bundle(s, w.secrets[s])
	if sec := w.secrets[s]; sec == nil || !sec.ValidTLS {
		c.why, c.msg = string(gwv1.GatewayReasonInvalidClientCertificateRef), "Secret "+s.String()+" holds no valid certificate and key"
		if b != nil {
			c.msg += "; its last valid one is presented"
		}
	}
	if b != nil {
		c.name, c.pem = model.Name("ccert", s.Namespace, s.Name), b.PEM
	}
	return c
}

// backendCertStatus adds the ResolvedRefs condition of x's backend client
// certificate to st, when x asks for one.
func (w *world) backendCertStatus(x *gw, st *gwv1.GatewayStatus) {
	g := x.obj
	if g.Spec.TLS == nil || g.Spec.TLS.Backend == nil || g.Spec.TLS.Backend.ClientCertificateRef == nil {
		return
	}
	c := w.clientCertOf(g)
	if c.why == "" {
		st.Conditions = append(st.Conditions, cond("ResolvedRefs", true, "ResolvedRefs", "resolved", g.Generation))
		return
	}
	st.Conditions = append(st.Conditions, cond("ResolvedRefs", false, c.why, c.msg, g.Generation))
}

// withClientCert is t with the client certificate of the Gateway being
// served (w.serving), if it has one. Its CA file keeps its name either
// way (cafile.go).
func (w *world) withClientCert(t *model.BackendTLS) *model.BackendTLS {
	if t == nil || w.servingGW == nil {
		return t
	}
	c := w.clientCertOf(w.servingGW)
	if c.name == "" {
		return t
	}
	u := *t
	u.Cert, u.CertPEM = c.name, c.pem
	return &u
}
