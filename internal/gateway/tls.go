package gateway

import (
	"cmp"
	"maps"
	"slices"

	gwv1 "sigs.k8s.io/gateway-api/apis/v1"

	"github.com/haproxy-k8s-sync/haproxy-k8s-sync/internal/certs"
	"github.com/haproxy-k8s-sync/haproxy-k8s-sync/internal/model"
)

// TLS termination of HTTPS listeners: each certificateRef that resolves
// (http.go certRefs: a core Secret, granted across namespaces) becomes a
// model.Certificate served by the names its leaf carries, the first ref's
// the default for clients naming no known host; ALPN h2 and http/1.1.
// A Secret that is missing or holds no valid certificate leaves the
// listener's ResolvedRefs False (certRefs), but the certificate it held
// last time it was valid keeps serving (CertMemo), so a bad update never
// takes a working host down; a Secret never seen valid serves nothing.

// ALPN is what an HTTPS listener offers, in order.
var ALPN = []string{"h2", "http/1.1"}

// CertMemo remembers the last valid bundle of each Secret HTTPS listeners
// refer to, across passes. The caller (the gateway loop) owns it and
// passes it in Options.Certs; nil: no memory (a bad Secret serves
// nothing). Not safe for concurrent use: one pass at a time.
type CertMemo struct {
	last map[Key]*certs.Bundle
	used map[Key]bool // referred to in the pass under way
}

// begin starts a pass; end forgets the Secrets the pass did not refer to.
func (m *CertMemo) begin() {
	if m != nil {
		m.used = map[Key]bool{}
	}
}

func (m *CertMemo) end() {
	if m == nil {
		return
	}
	maps.DeleteFunc(m.last, func(k Key, _ *certs.Bundle) bool { return !m.used[k] })
	m.used = nil
}

// bundle is the bundle to serve for Secret k, whose cached object is s
// (nil when missing): its own when valid (remembered), else the last
// valid one.
func (m *CertMemo) bundle(k Key, s *Secret) *certs.Bundle {
	var b *certs.Bundle
	if s != nil && s.ValidTLS {
		b = s.Bundle
	}
	if m == nil {
		return b
	}
	m.used[k] = true
	if b != nil {
		if m.last == nil {
			m.last = map[Key]*certs.Bundle{}
		}
		m.last[k] = b
		return b
	}
	return m.last[k]
}

// CertSecrets are the Secrets an HTTPS listener of one of gws refers to:
// the only ones whose certificates the source keeps (source.Gateway). No
// ReferenceGrant is read: a Secret named without a grant is kept but
// never served.
func CertSecrets(gws []*gwv1.Gateway) map[Key]bool {
	out := map[Key]bool{}
	backendCertSecrets(gws, out) // backendcert.go
	for _, g := range gws {
		for _, l := range g.Spec.Listeners {
			if !terminatingSpec(l) { // HTTPS, or TLS Terminate
				continue
			}
			for _, ref := range l.TLS.CertificateRefs {
				if k, ok := certSecret(g, ref); ok {
					out[k] = true
				}
			}
		}
	}
	return out
}

// certSecret is the Secret a certificateRef names, if it names one.
func certSecret(g *gwv1.Gateway, ref gwv1.SecretObjectReference) (Key, bool) {
	return certSecretIn(g.Namespace, ref)
}

// certSecretIn is the Secret a certificateRef of an object in namespace
// ns names, if it names one.
func certSecretIn(ns string, ref gwv1.SecretObjectReference) (Key, bool) {
	if (ref.Group != nil && *ref.Group != "" && *ref.Group != "core") || (ref.Kind != nil && *ref.Kind != "Secret") {
		return Key{}, false
	}
	k := Key{ns, string(ref.Name)}
	if ref.Namespace != nil {
		k.Namespace = string(*ref.Namespace)
	}
	return k, true
}

// listenerTLS is the termination of an HTTPS or TLS Terminate listener: nil when it has no
// certificate to serve.
func (w *world) listenerTLS(g *gwv1.Gateway, l *listener, memo *CertMemo) *model.TLS {
	if !l.terminating() {
		return nil
	}
	t := &model.TLS{}
	if l.spec.Protocol == gwv1.HTTPSProtocolType {
		t.ALPN = slices.Clone(ALPN) // a TLS Terminate listener's stream is no HTTP: no ALPN
	}
	kind, home := l.owner(g) // listenerset.go
	for _, ref := range l.spec.TLS.CertificateRefs {
		k, ok := certSecretIn(home, ref)
		if !ok || k.Namespace != home && !w.grantedTo(kind, home, "Secret", k) {
			continue
		}
		b := memo.bundle(k, w.secrets[k])
		if b == nil {
			continue
		}
		c := model.Certificate{Name: model.Name("cert", k.Namespace, k.Name), SNI: b.Names, PEM: b.PEM}
		if t.Cert(c.Name) != nil {
			continue // named twice
		}
		if t.Default == "" {
			t.Default = c.Name
		}
		t.Certificates = append(t.Certificates, c)
		slices.SortFunc(t.Certificates, func(a, b model.Certificate) int { return cmp.Compare(a.Name, b.Name) })
	}
	if len(t.Certificates) == 0 {
		return nil
	}
	return t
}
