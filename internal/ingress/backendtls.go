package ingress

import (
	"crypto/sha256"
	"encoding/hex"
	"strings"

	corev1 "k8s.io/api/core/v1"

	"github.com/haproxy-k8s-sync/haproxy-k8s-sync/internal/certs"
	"github.com/haproxy-k8s-sync/haproxy-k8s-sync/internal/model"
	"github.com/haproxy-k8s-sync/haproxy-k8s-sync/internal/settings"
)

// TLS to an Ingress's backends, on the Gateway's backend TLS model
// (model.BackendTLS, render/backendtls.go): ingress-nginx's
// backend-protocol HTTPS and GRPCS with proxy-ssl-secret,
// proxy-ssl-verify, proxy-ssl-name and proxy-ssl-server-name; HAProxy
// Ingress's secure-backends and backend-protocol h1-ssl, h2-ssl with
// secure-crt-secret, secure-verify-ca-secret, secure-sni and
// secure-verify-hostname. The Secrets come from the gateway source's
// Secret informer (their key ca.crt, checked: Input.CAs; a
// kubernetes.io/tls Secret's certificate and key: Input.Certs). A backend
// that speaks TLS is a backend of its own, named by its settings, so
// turning TLS on or off, or another CA, is a new backend (one reload, as
// for a BackendTLSPolicy). A CA that is asked for and does not resolve
// makes the backend refuse its requests (503) rather than go unverified:
// an Event InvalidBackendTLS says why.

// CAKey is the key of a CA bundle in a Secret (ingress-nginx's and HAProxy
// Ingress's).
const CAKey = "ca.crt"

// backendTLSAnnotations are the backend TLS annotations, checked.
type backendTLSAnnotations struct {
	on         bool   // backend-protocol HTTPS, GRPCS, h1-ssl, h2-ssl; secure-backends
	nginx      bool   // ingress-nginx's semantics (verify off unless proxy-ssl-verify on)
	secret     string // proxy-ssl-secret: CA (ca.crt) and client certificate
	verify     bool   // proxy-ssl-verify on
	name       string // proxy-ssl-name
	serverName bool   // proxy-ssl-server-name on
	caSecret   string // secure-verify-ca-secret
	crtSecret  string // secure-crt-secret
	sni        string // secure-sni
	verifyHost string // secure-verify-hostname
	// proxy-ssl-protocols, proxy-ssl-ciphers, ssl-ciphers-backend,
	// ssl-cipher-suites-backend (tlsopts.go)
	minVer, maxVer, ciphers, suites string
}

// parseBackendTLS reads key (canonical; name without its prefix) into s
// when it is a backend TLS key: done is false for the others.
func (s *parsed) parseBackendTLS(key, name, val string) (why string, done bool) {
	b := &s.btls
	if why, done := b.parseTLSOptions(key, name, val); done { // tlsopts.go
		return why, true
	}
	host := func(dst *string) string {
		h := strings.ToLower(val)
		if !model.ValidSNI(h) || strings.HasPrefix(h, "*") {
			return settings.ShowValue(val) + " is not a host name"
		}
		*dst = h
		return ""
	}
	onOff := func(dst *bool) string {
		switch strings.ToLower(val) {
		case "on":
			*dst = true
		case "off":
			*dst = false
		default:
			return settings.ShowValue(val) + " is not on or off"
		}
		return ""
	}
	secret := func(dst *string) string {
		if val == "" || strings.Count(val, "/") > 1 {
			return settings.ShowValue(val) + " is not a Secret's name or namespace/name"
		}
		*dst = val
		return ""
	}
	nginx := strings.HasPrefix(key, NginxPrefix)
	switch name {
	case "proxy-ssl-secret":
		return secret(&b.secret), true
	case "proxy-ssl-verify":
		return onOff(&b.verify), true
	case "proxy-ssl-name":
		return host(&b.name), true
	case "proxy-ssl-server-name":
		return onOff(&b.serverName), true
	case "secure-backends":
		if nginx {
			return "", false
		}
		switch strings.ToLower(val) {
		case "true":
			b.on = true
		case "false":
		default:
			return settings.ShowValue(val) + " is not true or false", true
		}
		return "", true
	case "secure-crt-secret":
		return secret(&b.crtSecret), true
	case "secure-verify-ca-secret":
		return secret(&b.caSecret), true
	case "secure-sni":
		if v := strings.ToLower(val); v == "sni" || v == "host" {
			return settings.ShowValue(val) + " is not served: only a host name sent as it is (the request's own name is not sent yet)", true
		}
		return host(&b.sni), true
	case "secure-verify-hostname":
		return host(&b.verifyHost), true
	}
	return "", false
}

// finish checks the keys together ("" or why the Ingress is refused).
func (b *backendTLSAnnotations) finish() string {
	if b.serverName && b.name == "" {
		return "annotation " + NginxPrefix + "proxy-ssl-server-name: on needs proxy-ssl-name, the name to send"
	}
	return ""
}

// resolve is the Ingress's backend TLS (nil: in clear) and its backends'
// name tag (tlsTag); event reports a
// Secret that does not resolve (a CA asked for and missing: the backend
// refuses its requests). why refuses the Ingress: a Secret of another
// namespace.
func (b *backendTLSAnnotations) resolve(ns string, in Input, event func(reason, msg string)) (t *model.BackendTLS, tag, why string) {
	if !b.on {
		return nil, "", ""
	}
	t = &model.BackendTLS{MinVer: b.minVer, MaxVer: b.maxVer, Ciphers: b.ciphers, CipherSuites: b.suites}
	caSecret, crtSecret := b.caSecret, b.crtSecret
	verify := caSecret != ""
	if b.nginx {
		caSecret, crtSecret, verify = b.secret, b.secret, b.verify
		t.VerifyHost = b.name
		if b.serverName {
			t.SNI = b.name
		}
	} else {
		t.SNI, t.VerifyHost = b.sni, b.verifyHost
	}
	if t.VerifyHost == t.SNI {
		t.VerifyHost = "" // the SNI's name is the one checked
	}
	key := func(name string) (Key, string) {
		if n, rest, ok := strings.Cut(name, "/"); ok {
			if n != ns {
				return Key{}, "Secret " + settings.ShowValue(name) + ": a Secret of another namespace is not read"
			}
			name = rest
		}
		return Key{ns, name}, ""
	}
	if !verify {
		t.NoVerify = true
	} else {
		k, why := key(caSecret)
		if why != "" {
			return nil, "", why
		}
		caSecret = k.String()
		ca := in.CAs[k]
		if ca == nil {
			p := in.CAProblems[k]
			if p == "" {
				p = "not found, or no key " + CAKey
			}
			event("InvalidBackendTLS", "Secret "+k.String()+": "+p+"; the backend's requests are answered 503 until it holds a CA bundle")
		} else {
			// Named for its Secret: another bundle is committed and the
			// servers created again, no reload (runtimeapi/renew.go).
			t.CA, t.CAPEM = model.Name("ca", k.Namespace, k.Name), ca
		}
	}
	if crtSecret != "" {
		k, why := key(crtSecret)
		if why != "" {
			return nil, "", why
		}
		crtSecret = k.String()
		switch c := in.Certs[k]; {
		case c != nil:
			// Named for its Secret: a rotation is committed through the
			// Runtime API, no reload (runtimeapi/clientcerts.go).
			t.Cert, t.CertPEM = model.Name("ccert", k.Namespace, k.Name), c.PEM
		case !b.nginx:
			// ingress-nginx's proxy-ssl-secret may hold a CA only.
			p := in.Problems[k]
			if p == "" {
				p = "not found"
			}
			event("InvalidBackendTLS", "Secret "+k.String()+": "+p+"; no client certificate is presented to the backend")
		}
	}
	if !verify {
		caSecret = ""
	}
	return t, tlsTag(t, caSecret, crtSecret), ""
}

// tlsTag is the part of the name of a backend speaking TLS that says its
// settings: other settings (names sent and checked, verification, the
// Secrets named) are another backend; another CA in the same Secret is
// the same backend and file with another bundle (no reload, as for a
// BackendTLSPolicy), another certificate another file (a reload), and a backend never changes between clear and TLS
// under one name (gateway.tlsSuffix says why).
func tlsTag(t *model.BackendTLS, ca, crt string) string {
	verify := "v"
	if t.NoVerify {
		verify = "n"
	}
	parts := []string{t.SNI, t.VerifyHost, verify, ca, crt}
	if t.MinVer != "" || t.MaxVer != "" || t.Ciphers != "" || t.CipherSuites != "" {
		// tlsopts.go; a backend without them keeps its name
		parts = append(parts, t.MinVer, t.MaxVer, t.Ciphers, t.CipherSuites)
	}
	sum := sha256.Sum256([]byte(strings.Join(parts, "|")))
	return "s" + hex.EncodeToString(sum[:4])
}

// SecretCA is a Secret's CA bundle (key CAKey), checked, or why it is
// not one; nil and "" when it has none.
func SecretCA(s *corev1.Secret) ([]byte, string) {
	v, ok := s.Data[CAKey]
	if !ok || s.Type == corev1.SecretTypeServiceAccountToken { // an old token Secret's ca.crt: the apiserver's
		return nil, ""
	}
	ca, err := certs.CABundle(v)
	if err != nil {
		return nil, CAKey + " " + err.Error()
	}
	return ca, ""
}

// CAFiles are Input.CAs and Input.CAProblems from Secrets (render's, read
// from files), as the gateway source keeps them.
func CAFiles(secrets []*corev1.Secret) (map[Key][]byte, map[Key]string) {
	ok, bad := map[Key][]byte{}, map[Key]string{}
	for _, s := range secrets {
		ca, why := SecretCA(s)
		k := Key{s.Namespace, s.Name}
		switch {
		case ca != nil:
			ok[k] = ca
		case why != "":
			bad[k] = why
		}
	}
	return ok, bad
}
