package gateway

import (
	"testing"

	corev1 "k8s.io/api/core/v1"
	gwv1 "sigs.k8s.io/gateway-api/apis/v1"

	"github.com/haproxy-k8s-sync/haproxy-k8s-sync/internal/model"
	"github.com/haproxy-k8s-sync/haproxy-k8s-sync/internal/testing/testcert"
)

// A CA file keeps its name when its bundle changes: a frontend's client
// CA, a backend presenting a client certificate, and one presenting none,
// whose servers the driver creates again (cafile.go).
func TestCAFileNamedForWhatItVerifies(t *testing.T) {
	a, b := testcert.CA(t, "CA a"), testcert.CA(t, "CA b")
	clientCA := func(c testcert.Cert) string {
		w := &world{configMaps: map[Key]*corev1.ConfigMap{{"apps", "ca"}: {ObjectMeta: meta("apps", "ca", 0), Data: map[string]string{CAKey: string(c.PEM())}}}}
		l := &listener{spec: httpsListener("web", 443), port: 443, accepted: true, tls: &model.TLS{}}
		g := gateway("apps", "gw", "hks", 0)
		g.Spec.TLS = &gwv1.GatewayTLSConfig{Frontend: &gwv1.FrontendTLSConfig{Default: gwv1.TLSConfig{Validation: validation("", "ConfigMap//ca")}}}
		w.clientAuth(g, l, nil)
		return l.tls.Client.CA
	}
	backendCA := func(cert string) func(testcert.Cert) string {
		return func(c testcert.Cert) string {
			t := &model.BackendTLS{SNI: "a.example.com", CA: "ca_apps_p", CAPEM: c.PEM(), Cert: cert}
			if cert != "" {
				t.CertPEM = []byte("PEM")
			}
			return (&world{}).withClientCert(t).CA
		}
	}
	for _, tc := range []struct {
		name string
		ca   func(testcert.Cert) string
		same bool
	}{
		{"a frontend's client CA", clientCA, true},
		{"a backend presenting a client certificate", backendCA("ccert_apps_client_1"), true},
		{"a backend presenting none", backendCA(""), true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			na, nb := tc.ca(a), tc.ca(b)
			if !model.ValidCertName(na) || !model.ValidCertName(nb) {
				t.Fatalf("names %q, %q: not valid", na, nb)
			}
			if (na == nb) != tc.same {
				t.Errorf("names %q and %q for two bundles; want the same name: %v", na, nb, tc.same)
			}
		})
	}
}
