package runtimeapi

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"fmt"
	"net/http"
	"net/netip"
	"testing"
	"time"

	"github.com/haproxy-k8s-sync/haproxy-k8s-sync/internal/certs"
	"github.com/haproxy-k8s-sync/haproxy-k8s-sync/internal/model"
	"github.com/haproxy-k8s-sync/haproxy-k8s-sync/internal/testing/testcert"
)

// TestBackendClientCertRotated: a backend's client certificate keeps its
// file's name when it rotates (named for its Secret), and the new one is
// committed through the Runtime API (clientcerts.go): a server that
// requires a client certificate then sees the new subject, with no
// reload and no failed request while requests flow. Then the CA bundle
// and the certificate change in one pass, still with no reload.
func TestBackendClientCertRotated(t *testing.T) {
	l := startMapLab(t)
	ctx := context.Background()
	b := newClientCertBackend(t) // cafiles_test.go: its frontend and names
	clientCA := testcert.CA(t, "client CA r")
	pool := x509.NewCertPool()
	pool.AddCert(clientCA.Cert)
	b.srv = serveTLSHandler(t, b.serverCA, &tls.Config{ClientAuth: tls.RequireAndVerifyClientCert, ClientCAs: pool}, func(w http.ResponseWriter, r *http.Request) {
		fmt.Fprintf(w, "cn=%s", r.TLS.PeerCertificates[0].Subject.CommonName)
	}, "a.example.com")
	pemOf := func(cn string) []byte {
		c := testcert.Issue(t, testcert.Spec{CN: cn, Client: true}, clientCA)
		bu, err := certs.Parse(c.PEM(), c.KeyPEM(t), c.Cert.NotBefore)
		if err != nil {
			t.Fatal(err)
		}
		return bu.PEM
	}
	otherCA := testcert.CA(t, "another server CA")
	cfgOf := func(client []byte, ca ...testcert.Cert) model.Config {
		var bundle []byte
		for _, c := range ca {
			bundle = append(bundle, c.PEM()...)
		}
		return b.config("gwhs_a_ccert_apps_client", &model.BackendTLS{SNI: "a.example.com", CA: "ca_apps_p", CAPEM: bundle,
			Cert: "ccert_apps_client", CertPEM: client})
	}
	subject := func(step, cn string) {
		t.Helper()
		var code int
		var body string
		for end := time.Now().Add(10 * time.Second); time.Now().Before(end); time.Sleep(20 * time.Millisecond) {
			if code, body = httpGet(t, b.addr, "a.example.com", "/"); code == http.StatusOK && body == "cn="+cn {
				return
			}
		}
		t.Fatalf("%s: last answer %d %q, want 200 cn=%s", step, code, body, cn)
	}
	if res, err := l.d.Apply(ctx, cfgOf(pemOf("client a"), b.serverCA)); err != nil || !res.Reloaded {
		t.Fatalf("first apply: reloaded %v, %v", res.Reloaded, err)
	}
	subject("certificate a", "client a")
	base := l.reloads(ctx, t)

	load := startLoad(b.addr, "a.example.com")
	for _, step := range []struct {
		name, cn string
		ca       []testcert.Cert
	}{
		{"certificate b", "client b", []testcert.Cert{b.serverCA}},
		{"certificate c and another CA bundle", "client c", []testcert.Cert{b.serverCA, otherCA}},
	} {
		if reloaded, err := applyUntilDone(ctx, l.d, cfgOf(pemOf(step.cn), step.ca...)); err != nil || reloaded {
			t.Fatalf("%s: reloaded %v, %v; want no reload", step.name, reloaded, err)
		}
		subject(step.name, step.cn)
	}
	if n, failed, last := load.stop(); n == 0 || failed > 0 {
		t.Errorf("rotation under load: %d of %d requests failed, the last: %s", failed, n, last)
	}
	if n := l.reloads(ctx, t); n != base {
		t.Errorf("%d reloads for the rotations, want 0", n-base)
	}
	// Read back (a controller restart): the certificate is set again,
	// its content unknown; no reload.
	l.d.mu.Lock()
	l.d.known, l.d.certs.known = false, false
	l.d.mu.Unlock()
	if reloaded, err := applyUntilDone(ctx, l.d, cfgOf(pemOf("client d"), b.serverCA)); err != nil || reloaded {
		t.Fatalf("after read back: reloaded %v, %v; want no reload", reloaded, err)
	}
	subject("certificate d after read back", "client d")
}

// serveTLSHandler serves HTTPS with h on a free loopback port, with a
// certificate for names signed by ca and the server's settings in cfg.
func serveTLSHandler(t *testing.T, ca testcert.Cert, cfg *tls.Config, h http.HandlerFunc, names ...string) netip.AddrPort {
	t.Helper()
	leaf := testcert.Issue(t, testcert.Spec{CN: names[0], DNS: names}, ca)
	pair, err := tls.X509KeyPair(leaf.PEM(), leaf.KeyPEM(t))
	if err != nil {
		t.Fatal(err)
	}
	cfg.Certificates = []tls.Certificate{pair}
	ln, err := tls.Listen("tcp", "127.0.0.1:0", cfg)
	if err != nil {
		t.Fatal(err)
	}
	srv := &http.Server{ReadHeaderTimeout: 5 * time.Second, Handler: h}
	go func() { _ = srv.Serve(ln) }()
	t.Cleanup(func() { _ = srv.Close() })
	return netip.MustParseAddrPort(ln.Addr().String())
}
