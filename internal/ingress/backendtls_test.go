package ingress

import (
	"testing"

	corev1 "k8s.io/api/core/v1"

	"github.com/haproxy-k8s-sync/haproxy-k8s-sync/internal/testing/testcert"
)

// SecretCA: a Secret's ca.crt checked, an old service account token
// Secret's (the apiserver's CA, not a backend's) never read.
func TestSecretCA(t *testing.T) {
	ca := testcert.CA(t, "a CA").PEM()
	for _, tc := range []struct {
		name    string
		s       *corev1.Secret
		ok      bool
		problem bool
	}{
		{"opaque", &corev1.Secret{Type: corev1.SecretTypeOpaque, Data: map[string][]byte{CAKey: ca}}, true, false},
		{"tls", &corev1.Secret{Type: corev1.SecretTypeTLS, Data: map[string][]byte{CAKey: ca}}, true, false},
		{"none", &corev1.Secret{Type: corev1.SecretTypeOpaque, Data: map[string][]byte{"auth": []byte("x")}}, false, false},
		{"not a CA", &corev1.Secret{Type: corev1.SecretTypeOpaque, Data: map[string][]byte{CAKey: []byte("x")}}, false, true},
		{"token", &corev1.Secret{Type: corev1.SecretTypeServiceAccountToken, Data: map[string][]byte{CAKey: ca}}, false, false},
	} {
		got, why := SecretCA(tc.s)
		if (got != nil) != tc.ok || (why != "") != tc.problem {
			t.Errorf("%s: %d bytes, %q", tc.name, len(got), why)
		}
	}
}
