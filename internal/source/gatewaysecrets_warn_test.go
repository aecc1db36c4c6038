package source

import (
	"bytes"
	"log/slog"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	gwv1 "sigs.k8s.io/gateway-api/apis/v1"

	"github.com/haproxy-k8s-sync/haproxy-k8s-sync/internal/gateway"
	"github.com/haproxy-k8s-sync/haproxy-k8s-sync/internal/testing/testcert"
)

// A named Secret's problem is logged once per version, an unnamed one's
// never, and an expired certificate is logged as served.
func TestGatewaySecretsWarnOnce(t *testing.T) {
	var logs bytes.Buffer
	g := &Gateway{}
	g.secretState.log = slog.New(slog.NewTextHandler(&logs, nil))
	now := time.Now()
	old := testcert.Issue(t, testcert.Spec{DNS: []string{"old.example"}, NotBefore: now.Add(-48 * time.Hour), NotAfter: now.Add(-time.Hour)}, testcert.Cert{})
	secret := func(name, rv string, data map[string][]byte) *gateway.Secret {
		return toSecret(&corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: name, ResourceVersion: rv},
			Type: corev1.SecretTypeTLS, Data: data}, now)
	}
	bad := map[string][]byte{corev1.TLSCertKey: []byte("x"), corev1.TLSPrivateKeyKey: []byte("y")}
	expired := map[string][]byte{corev1.TLSCertKey: old.PEM(), corev1.TLSPrivateKeyKey: old.KeyPEM(t)}
	gw := &gwv1.Gateway{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "gw"}, Spec: gwv1.GatewaySpec{Listeners: []gwv1.Listener{{
		Name: "https", Protocol: gwv1.HTTPSProtocolType, Port: 443, TLS: &gwv1.ListenerTLSConfig{
			CertificateRefs: []gwv1.SecretObjectReference{{Name: "bad"}, {Name: "old"}}}}}}}
	list := func(rv string) []*gateway.Secret {
		return []*gateway.Secret{secret("bad", rv, bad), secret("old", "1", expired), secret("unnamed", "1", bad)}
	}
	count := func() (int, int, int) {
		s := logs.String()
		return strings.Count(s, "secret=ns/bad"), strings.Count(s, "secret=ns/old"), strings.Count(s, "unnamed")
	}
	g.secretsFor(list("1"), []*gwv1.Gateway{gw})
	g.secretsFor(list("1"), []*gwv1.Gateway{gw})
	if b, o, u := count(); b != 1 || o != 1 || u != 0 {
		t.Fatalf("bad %d, expired %d, unnamed %d warnings, want 1 1 0:\n%s", b, o, u, logs.String())
	}
	g.secretsFor(list("2"), []*gwv1.Gateway{gw})
	if b, _, _ := count(); b != 2 || !strings.Contains(logs.String(), "expired certificate") {
		t.Fatalf("a new version of the bad Secret: %d warnings\n%s", b, logs.String())
	}
}
