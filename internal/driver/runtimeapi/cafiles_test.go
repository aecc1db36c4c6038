package runtimeapi

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"fmt"
	"net"
	"net/http"
	"net/netip"
	"path/filepath"
	"slices"
	"testing"
	"time"

	"github.com/haproxy-k8s-sync/haproxy-k8s-sync/internal/certs"
	"github.com/haproxy-k8s-sync/haproxy-k8s-sync/internal/haproxy/haproxytest"
	"github.com/haproxy-k8s-sync/haproxy-k8s-sync/internal/model"
	"github.com/haproxy-k8s-sync/haproxy-k8s-sync/internal/testing/testcert"
)

// serveTLS serves HTTPS on a free loopback port with a certificate for
// names signed by ca; each answer names the server name the client sent.
func serveTLS(t *testing.T, ca testcert.Cert, names ...string) netip.AddrPort {
	t.Helper()
	return serveTLSConfig(t, ca, &tls.Config{}, names...)
}

// serveTLSConfig is serveTLS with the server's settings in cfg (its
// certificate added).
func serveTLSConfig(t *testing.T, ca testcert.Cert, cfg *tls.Config, names ...string) netip.AddrPort {
	t.Helper()
	return serveTLSHandler(t, ca, cfg, func(w http.ResponseWriter, r *http.Request) {
		fmt.Fprintf(w, "sni=%s", r.TLS.ServerName)
	}, names...) // clientcerts_test.go
}

// TestBackendTLSCA: a backend speaking TLS verifies its server against
// the CA file and the hostname: a CA that did not sign the server's
// certificate, or a hostname the certificate does not carry, refuses the
// request (503); another CA is another file loaded by a reload, another
// bundle under the same name is committed and the servers created again
// (renew.go); the server sees the hostname as SNI.
func TestBackendTLSCA(t *testing.T) {
	l := startMapLab(t)
	ctx := context.Background()
	right, wrong := testcert.CA(t, "right CA"), testcert.CA(t, "wrong CA")
	srv := serveTLS(t, right, "a.example.com")
	port := uint16(haproxytest.FreePort(t))
	addr := net.JoinHostPort("127.0.0.1", fmt.Sprint(port))
	cfgOf := func(sni, caName string, ca testcert.Cert) model.Config {
		return model.Config{
			Frontends: []model.Frontend{{Name: "gw_apps_gw_80", Binds: []model.Bind{{Addr: netip.MustParseAddr("127.0.0.1"), Port: port}},
				HTTP: model.Shaped(&model.HTTP{Port: 80, Hosts: []model.HTTPHost{{Name: "*", Rules: []model.HTTPRule{{PathType: model.PathPrefix, Path: "/", Action: 0}}}},
					Actions: []model.HTTPAction{{Backends: one("gwh_a")}}})}},
			Backends: []*model.Backend{{Name: "gwh_a", Service: "apps/a", Balance: "roundrobin", HTTP: true,
				Servers: []model.Server{{Addr: srv.Addr(), Port: srv.Port()}},
				TLS:     &model.BackendTLS{SNI: sni, CA: caName, CAPEM: ca.PEM()}}},
		}
	}
	// eventually polls until a request answers code (and body when not
	// ""), printing the last answer on failure.
	eventually := func(code int, body string) {
		t.Helper()
		var gotCode int
		var gotBody string
		for end := time.Now().Add(10 * time.Second); time.Now().Before(end); time.Sleep(50 * time.Millisecond) {
			if gotCode, gotBody = httpGet(t, addr, "a.example.com", "/"); gotCode == code && (body == "" || gotBody == body) {
				return
			}
		}
		t.Fatalf("last answer %d %q, want %d %q", gotCode, gotBody, code, body)
	}
	caFiles := func() int {
		t.Helper()
		m, err := filepath.Glob(filepath.Join(filepath.Dir(l.cfgPath), "certs", "ca_*.pem"))
		if err != nil {
			t.Fatal(err)
		}
		return len(m)
	}

	if _, err := l.d.Apply(ctx, cfgOf("a.example.com", "ca_apps_p_1", wrong)); err != nil {
		t.Fatal(err)
	}
	eventually(http.StatusServiceUnavailable, "")
	if _, err := l.d.Apply(ctx, cfgOf("a.example.com", "ca_apps_p_2", right)); err != nil {
		t.Fatal(err)
	}
	eventually(http.StatusOK, "sni=a.example.com")
	if n := caFiles(); n != 1 {
		t.Errorf("%d CA files, want the one in use", n)
	}
	// A hostname the certificate does not carry: refused.
	if _, err := l.d.Apply(ctx, cfgOf("b.example.com", "ca_apps_p_2", right)); err != nil {
		t.Fatal(err)
	}
	eventually(http.StatusServiceUnavailable, "")
	// The same CA file name with another bundle, on servers presenting
	// no client certificate: no reload, the servers are created again
	// naming the committed bundle (renew.go), which refuses the server.
	if _, err := l.d.Apply(ctx, cfgOf("a.example.com", "ca_apps_p_2", right)); err != nil {
		t.Fatal(err)
	}
	eventually(http.StatusOK, "sni=a.example.com")
	if reloaded, err := applyUntilDone(ctx, l.d, cfgOf("a.example.com", "ca_apps_p_2", wrong)); err != nil || reloaded {
		t.Fatalf("another bundle under the same name: reloaded %v, %v", reloaded, err)
	}
	eventually(http.StatusServiceUnavailable, "")
}

// clientCertBackend is a TLS server on loopback for a.example.com whose
// certificate serverCA signed and which requires a client certificate of
// its own client CA, clientPEM such a certificate's bundle (certs.Parse),
// and an HTTP frontend on a free loopback port (addr) before it.
type clientCertBackend struct {
	addr      string
	port      uint16
	srv       netip.AddrPort
	serverCA  testcert.Cert
	clientPEM []byte
}

func newClientCertBackend(t *testing.T) *clientCertBackend {
	b := &clientCertBackend{serverCA: testcert.CA(t, "server CA"), port: uint16(haproxytest.FreePort(t))}
	clientCA := testcert.CA(t, "client CA")
	pool := x509.NewCertPool()
	pool.AddCert(clientCA.Cert)
	b.srv = serveTLSConfig(t, b.serverCA, &tls.Config{ClientAuth: tls.RequireAndVerifyClientCert, ClientCAs: pool}, "a.example.com")
	client := testcert.Issue(t, testcert.Spec{CN: "gateway", Client: true}, clientCA)
	bundle, err := certs.Parse(client.PEM(), client.KeyPEM(t), client.Cert.NotBefore)
	if err != nil {
		t.Fatal(err)
	}
	b.clientPEM = bundle.PEM
	b.addr = net.JoinHostPort("127.0.0.1", fmt.Sprint(b.port))
	return b
}

// config is the frontend before backend n, speaking TLS to the server
// with t's settings.
func (b *clientCertBackend) config(n string, t *model.BackendTLS) model.Config {
	return model.Config{
		Frontends: []model.Frontend{{Name: "gw_apps_gw_80", Binds: []model.Bind{{Addr: netip.MustParseAddr("127.0.0.1"), Port: b.port}},
			HTTP: model.Shaped(&model.HTTP{Port: 80, Hosts: []model.HTTPHost{{Name: "*", Rules: []model.HTTPRule{{PathType: model.PathPrefix, Path: "/", Action: 0}}}},
				Actions: []model.HTTPAction{{Backends: one(n)}}})}},
		Backends: []*model.Backend{{Name: n, Service: "apps/a", Balance: "roundrobin", HTTP: true,
			Servers: []model.Server{{Addr: b.srv.Addr(), Port: b.srv.Port()}}, TLS: t}},
	}
}

// answers polls until a request through b's frontend is answered one of
// codes, printing the last answer on failure.
func (b *clientCertBackend) answers(t *testing.T, step string, codes ...int) {
	t.Helper()
	var got int
	var body string
	for end := time.Now().Add(10 * time.Second); time.Now().Before(end); time.Sleep(50 * time.Millisecond) {
		if got, body = httpGet(t, b.addr, "a.example.com", "/"); slices.Contains(codes, got) {
			return
		}
	}
	t.Fatalf("%s: last answer %d %q, want one of %v", step, got, body, codes)
}

// refusedCodes: 503 when the server's alert ends the handshake, 502 when
// TLS 1.3 finished the handshake first and the server's alert then
// closed the connection before any answer (seen under load).
var refusedCodes = []int{http.StatusServiceUnavailable, http.StatusBadGateway}

// TestBackendTLSClientCertificate: a backend presenting a client
// certificate (a Gateway's backend one) is let in by a server that
// requires one signed by its CA; the same backend without it is refused.
func TestBackendTLSClientCertificate(t *testing.T) {
	l := startMapLab(t)
	ctx := context.Background()
	b := newClientCertBackend(t)
	tlsOf := func(cert string, pem []byte) *model.BackendTLS {
		return &model.BackendTLS{SNI: "a.example.com", CA: "ca_apps_p_1", CAPEM: b.serverCA.PEM(), Cert: cert, CertPEM: pem}
	}
	if _, err := l.d.Apply(ctx, b.config("gwhs_a", tlsOf("", nil))); err != nil {
		t.Fatal(err)
	}
	b.answers(t, "no client certificate", refusedCodes...)
	if _, err := l.d.Apply(ctx, b.config("gwhs_accert_apps_client_1", tlsOf("ccert_apps_client_1", b.clientPEM))); err != nil {
		t.Fatal(err)
	}
	b.answers(t, "the client certificate", http.StatusOK)
}
