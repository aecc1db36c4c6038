package runtimeapi

import (
	"context"
	"crypto/tls"
	"fmt"
	"io"
	"maps"
	"net"
	"net/http"
	"slices"
	"testing"
	"time"

	"github.com/haproxy-k8s-sync/haproxy-k8s-sync/internal/model"
	"github.com/haproxy-k8s-sync/haproxy-k8s-sync/internal/testing/testcert"
)

// TestClientCAChangesWithoutReload: a frontend's client CA file keeps
// its name and takes another bundle through the Runtime API (cafiles.go):
// no reload, and from then on the clients of the new CA are let in and
// those of the old one refused, for the certificate chosen by SNI (a
// client naming no host is refused: the default line never asks); a
// bundle of both CAs lets both in.
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
					// A client naming no host is refused while a
					// certificate is required (render/clientauth.go).
					if err := served(c, sni); (err == nil) != (in[c] && sni != "") {
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
	b := newClientCertBackend(t) // cafiles_test.go
	wrongCA := testcert.CA(t, "wrong CA")
	cfgOf := func(ca testcert.Cert) model.Config {
		return b.config("gwhs_a", &model.BackendTLS{SNI: "a.example.com", CA: "ca_apps_p", CAPEM: ca.PEM(),
			Cert: "ccert_apps_client_1", CertPEM: b.clientPEM})
	}
	if res, err := l.d.Apply(ctx, cfgOf(wrongCA)); err != nil || !res.Reloaded {
		t.Fatalf("first apply: reloaded %v, %v", res.Reloaded, err)
	}
	base := l.reloads(ctx, t)
	b.answers(t, "the wrong CA", refusedCodes...)
	for _, step := range []struct {
		name  string
		ca    testcert.Cert
		codes []int
	}{
		{"the server's CA", b.serverCA, []int{http.StatusOK}},
		{"the wrong CA again", wrongCA, refusedCodes},
	} {
		res, err := l.d.Apply(ctx, cfgOf(step.ca))
		if err != nil || res.Reloaded {
			t.Fatalf("%s: reloaded %v, %v", step.name, res.Reloaded, err)
		}
		b.answers(t, step.name, step.codes...)
	}
	if n := l.reloads(ctx, t); n != base {
		t.Errorf("%d reloads for the CA changes, want 0", n-base)
	}
}
