package ingress

import (
	"testing"

	"github.com/haproxy-k8s-sync/haproxy-k8s-sync/internal/model"
)

// TestAuthTLSAnnotations: the auth-tls keys' values, read or refused;
// HAProxy Ingress's read as ingress-nginx's (its secret choosing its
// X-SSL-Client-* headers); match-cn read when it is a regular
// expression HAProxy's matcher runs in bounded time, refused otherwise.
func TestAuthTLSAnnotations(t *testing.T) {
	for _, tc := range []struct {
		key, value string
		refused    bool
		want       authTLSAnnotations
	}{
		{NginxPrefix + "auth-tls-secret", "ca", false, authTLSAnnotations{secret: "ca"}},
		{NginxPrefix + "auth-tls-secret", "other/ca", false, authTLSAnnotations{secret: "other/ca"}},
		{NginxPrefix + "auth-tls-secret", "a/b/c", true, authTLSAnnotations{}},
		{NginxPrefix + "auth-tls-secret", "Bad_Name", true, authTLSAnnotations{}},
		{NginxPrefix + "auth-tls-secret", "/ca", true, authTLSAnnotations{}},
		{NginxPrefix + "auth-tls-verify-client", "on", false, authTLSAnnotations{mode: "on"}},
		{NginxPrefix + "auth-tls-verify-client", "optional", false, authTLSAnnotations{mode: "optional"}},
		{NginxPrefix + "auth-tls-verify-client", "off", false, authTLSAnnotations{mode: "off"}},
		{NginxPrefix + "auth-tls-verify-client", "optional_no_ca", true, authTLSAnnotations{}},
		{NginxPrefix + "auth-tls-verify-client", "yes", true, authTLSAnnotations{}},
		{NginxPrefix + "auth-tls-match-cn", "CN=(alice|bob)", false, authTLSAnnotations{matchCN: "CN=(alice|bob)"}},
		{NginxPrefix + "auth-tls-match-cn", "CN=(alice", true, authTLSAnnotations{}},
		{NginxPrefix + "auth-tls-match-cn", "CN=(a+)+$", true, authTLSAnnotations{}},
		{NginxPrefix + "auth-tls-match-cn", "", true, authTLSAnnotations{}},
		{NginxPrefix + "auth-tls-pass-certificate-to-upstream", "true", false, authTLSAnnotations{pass: true}},
		{NginxPrefix + "auth-tls-pass-certificate-to-upstream", "false", false, authTLSAnnotations{}},
		{NginxPrefix + "auth-tls-pass-certificate-to-upstream", "always", true, authTLSAnnotations{}},
		{HAProxyPrefix + "auth-tls-secret", "ca", false, authTLSAnnotations{secret: "ca", ha: true}},
		{HAProxyPrefix + "auth-tls-secret", "other/ca", false, authTLSAnnotations{secret: "other/ca", ha: true}},
		{HAProxyPrefix + "auth-tls-secret", "file:///dir/ca.pem", true, authTLSAnnotations{}},
		{"ingress.kubernetes.io/auth-tls-secret", "ca", false, authTLSAnnotations{secret: "ca", ha: true}},
		{HAProxyPrefix + "auth-tls-verify-client", "optional", false, authTLSAnnotations{mode: "optional"}},
		{HAProxyPrefix + "auth-tls-verify-client", "optional_no_ca", true, authTLSAnnotations{}},
		{HAProxyPrefix + "auth-tls-strict", "true", false, authTLSAnnotations{}},
		{HAProxyPrefix + "auth-tls-strict", "false", false, authTLSAnnotations{lax: true}},
		{HAProxyPrefix + "auth-tls-strict", "maybe", true, authTLSAnnotations{}},
		{HAProxyPrefix + "auth-tls-cert-header", "true", false, authTLSAnnotations{haCert: true}},
		{HAProxyPrefix + "auth-tls-cert-header", "yes", true, authTLSAnnotations{}},
		{HAProxyPrefix + "auth-tls-error-page", "https://e.example/", false, authTLSAnnotations{}},
	} {
		s, _, refused := parseAnnotations(map[string]string{tc.key: tc.value})
		if (refused != "") != tc.refused {
			t.Errorf("%s=%q: refused %q, want refused %v", tc.key, tc.value, refused, tc.refused)
		}
		if s.authTLS != tc.want {
			t.Errorf("%s=%q: read %+v, want %+v", tc.key, tc.value, s.authTLS, tc.want)
		}
	}
}

// TestAuthTLSClientCert: the headers a verified host passes (none
// without verification; the certificate only when asked).
func TestAuthTLSClientCert(t *testing.T) {
	c := &model.ClientAuth{CA: "cca_ns_ca"}
	for _, tc := range []struct {
		a    authTLSAnnotations
		c    *model.ClientAuth
		want uint8
	}{
		{authTLSAnnotations{}, nil, 0},
		{authTLSAnnotations{pass: true}, nil, 0},
		{authTLSAnnotations{}, c, model.ClientCertInfo},
		{authTLSAnnotations{pass: true}, c, model.ClientCertPass},
		{authTLSAnnotations{ha: true}, nil, 0},
		{authTLSAnnotations{ha: true}, c, model.ClientCertHAInfo},
		{authTLSAnnotations{ha: true, haCert: true}, c, model.ClientCertHAPass},
	} {
		if got := tc.a.clientCert(tc.c); got != tc.want {
			t.Errorf("%+v with client %v: %d, want %d", tc.a, tc.c != nil, got, tc.want)
		}
	}
}

// TestAuthTLSBothPrefixes: both prefixes' auth-tls-secret naming one
// Secret is read (HAProxy Ingress's headers); naming two refuses the
// Ingress.
func TestAuthTLSBothPrefixes(t *testing.T) {
	s, _, refused := parseAnnotations(map[string]string{NginxPrefix + "auth-tls-secret": "ca", HAProxyPrefix + "auth-tls-secret": "ca"})
	if refused != "" || s.authTLS != (authTLSAnnotations{secret: "ca", ha: true}) {
		t.Errorf("one Secret under both prefixes: %+v, refused %q", s.authTLS, refused)
	}
	if _, _, refused := parseAnnotations(map[string]string{NginxPrefix + "auth-tls-secret": "ca", HAProxyPrefix + "auth-tls-secret": "other"}); refused == "" {
		t.Error("two Secrets under the two prefixes: not refused")
	}
}
