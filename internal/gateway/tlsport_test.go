package gateway

import (
	"slices"
	"testing"

	gwv1 "sigs.k8s.io/gateway-api/apis/v1"
)

// Several HTTPS listeners on one port (each its hostname and Secrets) are
// one frontend serving every listener's certificates, each for its own
// names; the default is the first listener's. Before, only one
// listener's certificates reached the frontend: a client naming another
// listener's host got a certificate not valid for it.
func TestHTTPSListenersShareAPort(t *testing.T) {
	in := base()
	g := in.Gateways[0]
	a, b := httpsListener("a", 443, secretRef("", "a")), httpsListener("b", 443, secretRef("", "b"), secretRef("", "b2"))
	ha, hb := gwv1.Hostname("a.example.com"), gwv1.Hostname("*.b.example.com")
	a.Hostname, b.Hostname = &ha, &hb
	g.Spec.Listeners = append(g.Spec.Listeners, a, b)
	in.Secrets = []*Secret{tlsSecret(t, "apps", "a", "a.example.com"), tlsSecret(t, "apps", "b", "x.b.example.com"), tlsSecret(t, "apps", "b2", "y.b.example.com")}
	res := Compute(in, Options{Certs: &CertMemo{}})
	var found bool
	for _, f := range res.Config.Frontends {
		if f.TLS == nil || len(f.Binds) == 0 || f.Binds[0].Port != 443 {
			continue
		}
		found = true
		got := certNames(f.TLS)
		want := []string{"cert_apps_a", "cert_apps_b", "cert_apps_b2"}
		if !slices.Equal(got, want) {
			t.Fatalf("certificates %v, want %v", got, want)
		}
		if f.TLS.Default != "cert_apps_a" {
			t.Fatalf("default %s, want the first listener's cert_apps_a", f.TLS.Default)
		}
		for _, c := range f.TLS.Certificates {
			if len(c.SNI) != 1 {
				t.Fatalf("%s: SNI %v, want its leaf's one name", c.Name, c.SNI)
			}
		}
	}
	if !found {
		t.Fatalf("no TLS frontend on port 443 in %+v", res.Config.Frontends)
	}
}
