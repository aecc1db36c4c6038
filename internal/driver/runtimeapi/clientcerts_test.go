package runtimeapi

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"fmt"
	"net/http"
	"net/netip"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
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
// reload and no failed request while requests flow. A worker takes
// commits of one kind, certificates or their CA files
// (haproxy/haproxy#3165: mixed, 2.6.12 ignored a certificate or its
// worker died): the other kind, or both at once, is a reload, after which
// commits are taken again. A controller started afresh keeps the files
// the worker holds when their fingerprints are the ones wanted (no
// reload), and reloads for a certificate rotated while it was away.
func TestBackendClientCertRotated(t *testing.T) {
	l := startMapLab(t)
	ctx := context.Background()
	var seenMu sync.Mutex
	seen := map[string]int{}
	b, clientCA := newClientCertServer(t, "client CA r", nil, func(w http.ResponseWriter, r *http.Request) {
		// Each connection serves one request: a rotated certificate is
		// presented on the server's next connections, and one HAProxy
		// kept open from before would go on answering with the old.
		w.Header().Set("Connection", "close")
		cn := r.TLS.PeerCertificates[0].Subject.CommonName
		seenMu.Lock() // what the server saw, for the failures' messages
		seen[fmt.Sprintf("%s resumed=%v", cn, r.TLS.DidResume)]++
		seenMu.Unlock()
		fmt.Fprintf(w, "cn=%s", cn)
	})
	seenOf := func() string {
		seenMu.Lock()
		defer seenMu.Unlock()
		s := fmt.Sprint(seen)
		clear(seen)
		return s
	}
	pems := map[string][]byte{}
	pemOf := func(cn string) []byte {
		if p, ok := pems[cn]; ok {
			return p
		}
		c := testcert.Issue(t, testcert.Spec{CN: cn, Client: true}, clientCA)
		bu, err := certs.Parse(c.PEM(), c.KeyPEM(t), c.Cert.NotBefore)
		if err != nil {
			t.Fatal(err)
		}
		pems[cn] = bu.PEM
		return bu.PEM
	}
	otherCA := testcert.CA(t, "another server CA")
	cfgOf := func(cn string, ca ...testcert.Cert) model.Config {
		var bundle []byte
		for _, c := range ca {
			bundle = append(bundle, c.PEM()...)
		}
		return b.config("gwhs_a_ccert_apps_client", &model.BackendTLS{SNI: "a.example.com", CA: "ca_apps_p", CAPEM: bundle,
			Cert: "ccert_apps_client", CertPEM: pemOf(cn)})
	}
	subject := func(step, cn string) {
		t.Helper()
		if code, body, ok := b.untilAnswer("cn=" + cn); !ok {
			t.Fatalf("%s: last answer %d %q, want 200 cn=%s; the server saw %s", step, code, body, cn, seenOf())
		}
		// And every new connection after it: a resumed TLS session would
		// present the old subject (no-ssl-reuse).
		stale := 0
		for range 10 {
			if _, body := tryGet(b.addr, "a.example.com"); body != "cn="+cn {
				stale++
			}
		}
		if stale > 0 {
			t.Errorf("%s: %d of the 10 connections after the first with cn=%s presented another certificate; the server saw %s",
				step, stale, cn, seenOf())
		}
		seenOf()
	}
	if res, err := l.d.Apply(ctx, cfgOf("client a", b.serverCA)); err != nil || !res.Reloaded {
		t.Fatalf("first apply: reloaded %v, %v", res.Reloaded, err)
	}
	subject("certificate a", "client a")
	base := l.reloads(ctx, t)

	load := startLoad(b.addr, "a.example.com")
	d := l.d
	want := 0
	for _, step := range []struct {
		name, cn string
		ca       []testcert.Cert
		restart  bool // a controller started afresh first
		reload   bool
	}{
		{name: "certificate b", cn: "client b", ca: []testcert.Cert{b.serverCA}},
		{name: "a CA bundle after a certificate commit", cn: "client b", ca: []testcert.Cert{b.serverCA, otherCA}, reload: true},
		{name: "certificate c and a CA bundle at once", cn: "client c", ca: []testcert.Cert{b.serverCA}, reload: true},
		{name: "a CA bundle after that reload", cn: "client c", ca: []testcert.Cert{b.serverCA, otherCA}},
		{name: "certificate d after a CA commit", cn: "client d", ca: []testcert.Cert{b.serverCA, otherCA}, reload: true},
		{name: "certificate e after that reload", cn: "client e", ca: []testcert.Cert{b.serverCA, otherCA}},
		{name: "certificate e, restarted", cn: "client e", ca: []testcert.Cert{b.serverCA, otherCA}, restart: true},
		{name: "certificate f, restarted", cn: "client f", ca: []testcert.Cert{b.serverCA, otherCA}, restart: true, reload: true},
	} {
		if step.restart {
			d = NewHAProxy(l.d.opts)
			t.Cleanup(func() { _ = d.Close() })
		}
		if reloaded, err := applyUntilDone(ctx, d, cfgOf(step.cn, step.ca...)); err != nil || reloaded != step.reload {
			t.Fatalf("%s: reloaded %v, %v; want reloaded %v", step.name, reloaded, err, step.reload)
		}
		if step.reload {
			want++
		}
		subject(step.name, step.cn)
	}
	if n, failed, last := load.stop(); n == 0 || failed > 0 {
		t.Errorf("rotations under load: %d of %d requests failed, the last: %s", failed, n, last)
	}
	if n := l.reloads(ctx, t); n != base+want {
		t.Errorf("%d reloads for the rotations, want %d", n-base, want)
	}
}

// newClientCertServer is newClientCertBackend's frontend and names
// (cafiles_test.go) before a server answering with h that requires a
// client certificate of a CA of its own (ca, named caName), with cfg's
// other settings (nil: none).
func newClientCertServer(t *testing.T, caName string, cfg *tls.Config, h http.HandlerFunc) (b *clientCertBackend, ca testcert.Cert) {
	t.Helper()
	b = newClientCertBackend(t)
	ca = testcert.CA(t, caName)
	pool := x509.NewCertPool()
	pool.AddCert(ca.Cert)
	if cfg == nil {
		cfg = &tls.Config{}
	}
	cfg.ClientAuth, cfg.ClientCAs = tls.RequireAndVerifyClientCert, pool
	b.srv = serveTLSHandler(t, b.serverCA, cfg, h, "a.example.com")
	return b, ca
}

// untilAnswer polls b's frontend for 10 s until it answers 200 with a
// body beginning with prefix; else ok is false and the last answer given.
func (b *clientCertBackend) untilAnswer(prefix string) (code int, body string, ok bool) {
	for end := time.Now().Add(10 * time.Second); time.Now().Before(end); time.Sleep(20 * time.Millisecond) {
		if code, body = tryGet(b.addr, "a.example.com"); code == http.StatusOK && strings.HasPrefix(body, prefix) {
			return code, body, true
		}
	}
	return code, body, false
}

// serveTLSHandler serves HTTPS with h on a free loopback port, with a
// certificate for names signed by ca and the server's settings in cfg.
func serveTLSHandler(t testing.TB, ca testcert.Cert, cfg *tls.Config, h http.HandlerFunc, names ...string) netip.AddrPort {
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

func TestCertFingerprints(t *testing.T) {
	for _, tc := range []struct {
		name, answer string
		want         []string
	}{
		{"a certificate", "Filename: /c/ccert_a.pem\nStatus: Used\nSerial: 01\nSHA1 FingerPrint: 3b1f00aa\nSubject: /CN=a\n", []string{"3B1F00AA"}},
		{"a CA file", "Filename: /c/ca.pem\nStatus: Used\n\nCertificate #1:\n  SHA1 FingerPrint: AB12  \n\nCertificate #2:\n  SHA1 FingerPrint: CD34\n", []string{"AB12", "CD34"}},
		{"none", "Filename: /c/ccert_a.pem\nStatus: Unused\n", nil},
		{"empty", "", nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := certFingerprints(tc.answer); !slices.Equal(got, tc.want) {
				t.Errorf("certFingerprints = %q, want %q", got, tc.want)
			}
		})
	}
}

// TestBackendClientCertNotResumed: a connection whose handshake began
// before a client certificate's commit and ended after it does not hand
// the servers' later connections the old identity. HAProxy keeps a
// server's last TLS session (per thread, and 2.9+ lends it to the other
// threads) and resumes it on new connections; `commit ssl cert` empties
// that store, but the handshake in flight stores its session after, made
// with the old certificate, and a resumed session carries the identity
// of the full handshake it came from (the server saw the old subject on
// every later connection: 3.0.11, 2026-11-29). So servers presenting a
// client certificate resume no session (`no-ssl-reuse`,
// render.tlsServerOptions). The server here holds one ClientHello until
// the commit is done, so that the race is met every run.
func TestBackendClientCertNotResumed(t *testing.T) {
	l := startMapLab(t)
	ctx := context.Background()
	var hold atomic.Pointer[chan struct{}] // armed: the next ClientHello waits until it is closed
	held := make(chan struct{}, 1)
	cfg := &tls.Config{GetConfigForClient: func(*tls.ClientHelloInfo) (*tls.Config, error) {
		if release := hold.Swap(nil); release != nil {
			held <- struct{}{}
			select {
			case <-*release:
			case <-time.After(10 * time.Second):
			}
		}
		return nil, nil
	}}
	b, clientCA := newClientCertServer(t, "client CA n", cfg, func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Connection", "close")
		fmt.Fprintf(w, "cn=%s resumed=%v", r.TLS.PeerCertificates[0].Subject.CommonName, r.TLS.DidResume)
	})
	cfgOf := func(cn string) model.Config { return b.withClientCert(t, clientCA, cn) }
	if res, err := l.d.Apply(ctx, cfgOf("client a")); err != nil || !res.Reloaded {
		t.Fatalf("first apply: reloaded %v, %v", res.Reloaded, err)
	}
	if code, body, ok := b.untilAnswer("cn=client a "); !ok {
		t.Fatalf("certificate a: last answer %d %q", code, body)
	}
	for range 4 { // sessions of certificate a in the store
		tryGet(b.addr, "a.example.com")
	}

	release := make(chan struct{})
	hold.Store(&release)
	first := make(chan string, 1)
	go func() { _, body := tryGet(b.addr, "a.example.com"); first <- body }()
	select {
	case <-held:
	case <-time.After(10 * time.Second):
		t.Fatal("no handshake reached the server")
	}
	reloaded, err := applyUntilDone(ctx, l.d, cfgOf("client b"))
	close(release)
	if err != nil || reloaded {
		t.Fatalf("certificate b: reloaded %v, %v; want a commit", reloaded, err)
	}
	t.Logf("the connection begun before the commit: %q", <-first)

	var stale []string
	for range 20 {
		if _, body := tryGet(b.addr, "a.example.com"); !strings.HasPrefix(body, "cn=client b ") {
			stale = append(stale, body)
		}
	}
	if len(stale) > 0 {
		t.Errorf("%d of 20 connections after the commit presented another certificate: %q", len(stale), stale)
	}
}
