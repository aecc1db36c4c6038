package runtimeapi

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"fmt"
	"io"
	"maps"
	"net"
	"net/http"
	"net/netip"
	"slices"
	"testing"
	"time"

	"github.com/haproxy-k8s-sync/haproxy-k8s-sync/internal/certs"
	"github.com/haproxy-k8s-sync/haproxy-k8s-sync/internal/haproxy/haproxytest"
	"github.com/haproxy-k8s-sync/haproxy-k8s-sync/internal/model"
	"github.com/haproxy-k8s-sync/haproxy-k8s-sync/internal/testing/testcert"
)

// TestClientCAChangesWithoutReload: a frontend's client CA file keeps
// its name and takes another bundle through the Runtime API (cafiles.go):
// no reload, and from then on the clients of the new CA are let in and
// those of the old one refused, for the default certificate and for one
// chosen by SNI; a bundle of both CAs lets both in.
func TestClientCAChangesWithoutReload(t *testing.T) {
	l := startLab(t)
	w := newTLSWorld(t)
	ctx := context.Background()
	caA, caB := testcert.CA(t, "client CA a"), testcert.CA(t, "client CA b")
	clientOf := func(ca testcert.Cert) tls.Certificate {
		c := testcert.Issue(t, testcert.Spec{CN: "client of " + ca.Cert.Subject.CommonName, Client: true}, ca)
		pair, err := tls.X509KeyPair(c.PEM(), c.KeyPEM(t))
		if err != nil {
			t.Fatal(err)
		}
		return pair
	}
	clients := map[string]tls.Certificate{"a": clientOf(caA), "b": clientOf(caB)}
	_, cert := w.issue(testcert.ECDSA, "a.example")
	cfgOf := func(bundle []byte) model.Config {
		cfg := w.config(cert.Name, cert)
		cfg.Frontends[0].TLS.Client = &model.ClientAuth{CA: "cca_default_gw_443", CAPEM: bundle}
		return cfg
	}
	// served is whether client c, naming sni, is answered by the node.
	served := func(c, sni string) error {
		cfg := &tls.Config{ServerName: sni, InsecureSkipVerify: true, Certificates: []tls.Certificate{clients[c]}} //nolint:gosec // the server's certificate is not the subject
		conn, err := tls.DialWithDialer(&net.Dialer{Timeout: 2 * time.Second}, "tcp", w.addr, cfg)
		if err != nil {
			return err
		}
		defer conn.Close()
		_ = conn.SetDeadline(time.Now().Add(2 * time.Second))
		got, err := io.ReadAll(conn) // TLS 1.3: a refused certificate shows on the first read
		if err == nil && string(got) != "node-0\n" && string(got) != "node-0" {
			err = fmt.Errorf("node answered %q", got)
		}
		return err
	}
	// want polls until each client is served or refused as in, for the
	// default certificate and by SNI, printing what was last seen.
	want := func(step string, in map[string]bool) {
		t.Helper()
		var last string
		for end := time.Now().Add(10 * time.Second); time.Now().Before(end); time.Sleep(50 * time.Millisecond) {
			last = ""
			for _, c := range slices.Sorted(maps.Keys(in)) {
				for _, sni := range []string{"", "a.example"} {
					if err := served(c, sni); (err == nil) != in[c] {
						last += fmt.Sprintf(" client %s sni %q: served %v (%v);", c, sni, err == nil, err)
					}
				}
			}
			if last == "" {
				return
			}
		}
		t.Fatalf("%s:%s", step, last)
	}

	if res, err := l.d.Apply(ctx, cfgOf(caA.PEM())); err != nil || !res.Reloaded {
		t.Fatalf("first apply: reloaded %v, %v", res.Reloaded, err)
	}
	base := l.reloads(ctx, t)
	want("CA a", map[string]bool{"a": true, "b": false})
	for _, step := range []struct {
		name   string
		bundle []byte
		in     map[string]bool
	}{
		{"CA b", caB.PEM(), map[string]bool{"a": false, "b": true}},
		{"both", append(caA.PEM(), caB.PEM()...), map[string]bool{"a": true, "b": true}},
		{"CA a again", caA.PEM(), map[string]bool{"a": true, "b": false}},
	} {
		res, err := l.d.Apply(ctx, cfgOf(step.bundle))
		if err != nil || res.Reloaded {
			t.Fatalf("%s: reloaded %v, %v", step.name, res.Reloaded, err)
		}
		want(step.name, step.in)
	}
	if n := l.reloads(ctx, t); n != base {
		t.Errorf("%d reloads for the CA changes, want 0", n-base)
	}
}

// TestBackendCAChangesWithoutReload: the CA file of a backend whose
// servers present a client certificate keeps its name and takes another
// bundle through the Runtime API: no reload, the server signed by the
// new CA is then reached, and refused again when the old CA comes back.
func TestBackendCAChangesWithoutReload(t *testing.T) {
	l := startMapLab(t)
	ctx := context.Background()
	serverCA, wrongCA, clientCA := testcert.CA(t, "server CA"), testcert.CA(t, "wrong CA"), testcert.CA(t, "client CA")
	pool := x509.NewCertPool()
	pool.AddCert(clientCA.Cert)
	srv := serveTLSConfig(t, serverCA, &tls.Config{ClientAuth: tls.RequireAndVerifyClientCert, ClientCAs: pool}, "a.example.com")
	client := testcert.Issue(t, testcert.Spec{CN: "gateway", Client: true}, clientCA)
	bundle, err := certs.Parse(client.PEM(), client.KeyPEM(t), client.Cert.NotBefore)
	if err != nil {
		t.Fatal(err)
	}
	port := uint16(haproxytest.FreePort(t))
	addr := net.JoinHostPort("127.0.0.1", fmt.Sprint(port))
	cfgOf := func(ca testcert.Cert) model.Config {
		return model.Config{
			Frontends: []model.Frontend{{Name: "gw_apps_gw_80", Binds: []model.Bind{{Addr: netip.MustParseAddr("127.0.0.1"), Port: port}},
				HTTP: &model.HTTP{Port: 80, Hosts: []model.HTTPHost{{Name: "*", Rules: []model.HTTPRule{{PathType: model.PathPrefix, Path: "/", Action: 0}}}},
					Actions: []model.HTTPAction{{Backends: one("gwhs_a")}}}}},
			Backends: []*model.Backend{{Name: "gwhs_a", Service: "apps/a", Balance: "roundrobin", HTTP: true,
				Servers: []model.Server{{Addr: srv.Addr(), Port: srv.Port()}},
				TLS: &model.BackendTLS{SNI: "a.example.com", CA: "ca_apps_p", CAPEM: ca.PEM(),
					Cert: "ccert_apps_client_1", CertPEM: bundle.PEM}}},
		}
	}
	eventually := func(step string, codes ...int) {
		t.Helper()
		var got int
		var body string
		for end := time.Now().Add(10 * time.Second); time.Now().Before(end); time.Sleep(50 * time.Millisecond) {
			if got, body = httpGet(t, addr, "a.example.com", "/"); slices.Contains(codes, got) {
				return
			}
		}
		t.Fatalf("%s: last answer %d %q, want one of %v", step, got, body, codes)
	}
	if res, err := l.d.Apply(ctx, cfgOf(wrongCA)); err != nil || !res.Reloaded {
		t.Fatalf("first apply: reloaded %v, %v", res.Reloaded, err)
	}
	base := l.reloads(ctx, t)
	// 503 when the handshake fails, 502 when TLS 1.3 ends it late.
	eventually("the wrong CA", http.StatusServiceUnavailable, http.StatusBadGateway)
	for _, step := range []struct {
		name  string
		ca    testcert.Cert
		codes []int
	}{
		{"the server's CA", serverCA, []int{http.StatusOK}},
		{"the wrong CA again", wrongCA, []int{http.StatusServiceUnavailable, http.StatusBadGateway}},
	} {
		res, err := l.d.Apply(ctx, cfgOf(step.ca))
		if err != nil || res.Reloaded {
			t.Fatalf("%s: reloaded %v, %v", step.name, res.Reloaded, err)
		}
		eventually(step.name, step.codes...)
	}
	if n := l.reloads(ctx, t); n != base {
		t.Errorf("%d reloads for the CA changes, want 0", n-base)
	}
}
