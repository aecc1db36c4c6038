package runtimeapi

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"io"
	"net"
	"net/netip"
	"os"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/haproxy-k8s-sync/haproxy-k8s-sync/internal/certs"
	"github.com/haproxy-k8s-sync/haproxy-k8s-sync/internal/driver"
	"github.com/haproxy-k8s-sync/haproxy-k8s-sync/internal/haproxy/haproxytest"
	"github.com/haproxy-k8s-sync/haproxy-k8s-sync/internal/model"
	"github.com/haproxy-k8s-sync/haproxy-k8s-sync/internal/render"
	"github.com/haproxy-k8s-sync/haproxy-k8s-sync/internal/testing/lab"
	"github.com/haproxy-k8s-sync/haproxy-k8s-sync/internal/testing/testcert"
)

// tlsWorld: a node stand-in behind one frontend that terminates TLS on
// loopback, and certificates issued by a root through an intermediate.
type tlsWorld struct {
	t      testing.TB
	node   *lab.NodeServer
	port   uint16
	addr   string
	fePort uint16
	root   testcert.Cert
	inter  testcert.Cert
	roots  *x509.CertPool
}

func newTLSWorld(t testing.TB) *tlsWorld {
	w := &tlsWorld{t: t, port: uint16(haproxytest.FreePort(t)), fePort: uint16(haproxytest.FreePort(t))}
	w.node = lab.NewNodeServer("node-0", "127.0.0.1")
	if err := w.node.Listen(int(w.port)); err != nil {
		t.Skipf("node stand-in: %v", err)
	}
	t.Cleanup(w.node.Close)
	w.addr = fmt.Sprintf("127.0.0.1:%d", w.fePort)
	w.root = testcert.CA(t, "test root")
	w.inter = testcert.Issue(t, testcert.Spec{CN: "test intermediate", CA: true}, w.root)
	w.roots = x509.NewCertPool()
	w.roots.AddCert(w.root.Cert)
	return w
}

// issue makes a leaf for names through the intermediate and its bundle
// (leaf and intermediate, as a Secret would hold them).
func (w *tlsWorld) issue(kt testcert.KeyType, names ...string) (*x509.Certificate, model.Certificate) {
	c := testcert.Issue(w.t, testcert.Spec{DNS: names, Key: kt}, w.inter)
	b, err := certs.Parse(append(c.PEM(), w.inter.PEM()...), c.KeyPEM(w.t), time.Now())
	if err != nil {
		w.t.Fatal(err)
	}
	return c.Cert, model.Certificate{Name: model.Name("cert", "default", names[0]), SNI: b.Names, PEM: b.PEM}
}

func (w *tlsWorld) config(def string, cs ...model.Certificate) model.Config {
	return model.Config{
		Frontends: []model.Frontend{{Name: "fe_https", Service: "default/gw", Backend: "be",
			Binds: []model.Bind{{Addr: netip.MustParseAddr("127.0.0.1"), Port: w.fePort}},
			TLS:   &model.TLS{Certificates: cs, Default: def, ALPN: []string{"h2", "http/1.1"}}}},
		Backends: []*model.Backend{{Name: "be", Service: "default/gw", Balance: "roundrobin",
			Servers: []model.Server{{Addr: netip.MustParseAddr("127.0.0.1"), Port: w.port}}}},
	}
}

// hello completes a handshake naming sni (none when empty) offering
// protos, verified against the root alone unless skip, and reads what the
// node behind says; it returns the leaf served and the protocol agreed.
func (w *tlsWorld) hello(sni string, skip bool, protos ...string) (*x509.Certificate, string, error) {
	cfg := &tls.Config{ServerName: sni, RootCAs: w.roots, NextProtos: protos, InsecureSkipVerify: skip}
	d := &net.Dialer{Timeout: 2 * time.Second}
	c, err := tls.DialWithDialer(d, "tcp", w.addr, cfg)
	if err != nil {
		return nil, "", err
	}
	defer c.Close()
	_ = c.SetDeadline(time.Now().Add(2 * time.Second))
	got, err := io.ReadAll(c)
	if err == nil && string(got) != "node-0\n" && string(got) != "node-0" {
		err = fmt.Errorf("node answered %q", got)
	}
	st := c.ConnectionState()
	return st.PeerCertificates[0], st.NegotiatedProtocol, err
}

// served fails t unless a client naming sni gets want.
func (w *tlsWorld) served(sni string, want *x509.Certificate) {
	w.t.Helper()
	leaf, _, err := w.hello(sni, true)
	if err != nil {
		w.t.Fatalf("%s: %v", sni, err)
	}
	if !leaf.Equal(want) {
		w.t.Fatalf("%s: served %v %v, want %v", sni, leaf.DNSNames, leaf.SerialNumber, want.DNSNames)
	}
}

func TestCertificatesWithoutReload(t *testing.T) {
	l := startLab(t)
	w := newTLSWorld(t)
	ctx := context.Background()
	if l.d.opts.Render.CertDir == "" {
		t.Fatalf("no certificate directory beside %s", l.cfgPath)
	}
	a, ca := w.issue(testcert.ECDSA, "a.example", "*.a.example")
	b, cb := w.issue(testcert.RSA, "b.example")
	res, err := l.d.Apply(ctx, w.config(ca.Name, ca, cb))
	if err != nil || !res.Reloaded {
		t.Fatalf("first apply: reloaded %v, %v", res.Reloaded, err)
	}
	base := l.reloads(ctx, t)

	// SNI picks the certificate, whose chain verifies with the root alone;
	// an unknown name gets the default; ALPN h2 and http/1.1.
	for _, tc := range []struct {
		sni   string
		want  *x509.Certificate
		proto string
	}{{"a.example", a, "h2"}, {"x.a.example", a, "http/1.1"}, {"b.example", b, "h2"}} {
		leaf, proto, err := w.hello(tc.sni, false, tc.proto)
		if err != nil || !leaf.Equal(tc.want) || proto != tc.proto {
			t.Fatalf("%s: %v, ALPN %q, %v", tc.sni, leaf.DNSNames, proto, err)
		}
	}
	w.served("unknown.example", a)
	w.served("", a)

	// A new certificate, a rotation, another default: no reload.
	c, cc := w.issue(testcert.Ed25519, "c.example")
	if _, err := l.d.Apply(ctx, w.config(ca.Name, ca, cb, cc)); err != nil {
		t.Fatal(err)
	}
	w.served("c.example", c)
	b2, cb2 := w.issue(testcert.ECDSA, "b.example")
	if _, err := l.d.Apply(ctx, w.config(cb2.Name, ca, cb2, cc)); err != nil {
		t.Fatal(err)
	}
	w.served("b.example", b2)
	w.served("unknown.example", b2)
	w.served("a.example", a)

	// A certificate whose key is another's: HAProxy refuses it, the pass
	// fails, the old one keeps serving, and the next good pass applies.
	bad := cc
	bad.PEM = append(append([]byte(nil), cc.PEM[:len(cc.PEM)-len(keyBlock(t, cc.PEM))]...), keyBlock(t, cb2.PEM)...)
	if _, err := l.d.Apply(ctx, w.config(cb2.Name, ca, cb2, bad)); err == nil {
		t.Fatal("a key mismatch was applied")
	}
	w.served("c.example", c)
	c2, cc2 := w.issue(testcert.ECDSA, "c.example")
	if _, err := l.d.Apply(ctx, w.config(cb2.Name, ca, cb2, cc2)); err != nil {
		t.Fatal(err)
	}
	w.served("c.example", c2)

	// Removal: the name falls back to the default, the file goes.
	if _, err := l.d.Apply(ctx, w.config(cb2.Name, ca, cb2)); err != nil {
		t.Fatal(err)
	}
	w.served("c.example", b2)
	dir := l.d.opts.Render.CertDir
	if _, err := os.Stat(render.CertFile(dir, cc.Name)); !os.IsNotExist(err) {
		t.Errorf("file of a removed certificate left: %v", err)
	}
	if fi, err := os.Stat(render.CertFile(dir, ca.Name)); err != nil || fi.Mode().Perm() != 0o600 {
		t.Errorf("certificate file: %v, %v", fi.Mode(), err)
	}
	if got := l.reloads(ctx, t); got != base {
		t.Fatalf("%d reloads for certificate changes", got-base)
	}

	// The files describe what runs: a restarted HAProxy serves the same.
	l.p.Restart(t)
	l.d.Invalidate()
	if _, err := l.d.Apply(ctx, w.config(cb2.Name, ca, cb2)); err != nil {
		t.Fatal(err)
	}
	w.served("b.example", b2)
	w.served("unknown.example", b2)

	// A restarted controller reads the worker's stores back and rotates
	// without a reload.
	d2 := NewHAProxy(l.d.opts)
	t.Cleanup(func() { _ = d2.Close() })
	base = l.reloads(ctx, t)
	a3, ca3 := w.issue(testcert.ECDSA, "a.example")
	res, err = d2.Apply(ctx, w.config(ca3.Name, ca3, cb2))
	if err != nil || res.Reloaded {
		t.Fatalf("new driver: reloaded %v (%v), %v", res.Reloaded, res.Reasons, err)
	}
	w.served("a.example", a3)
	w.served("unknown.example", a3)
	if got := l.reloads(ctx, t); got != base {
		t.Fatalf("%d reloads after a controller restart", got-base)
	}
}

// keyBlock is the trailing key block of a bundle.
func keyBlock(t *testing.T, pem []byte) []byte {
	t.Helper()
	const begin = "-----BEGIN PRIVATE KEY-----"
	for i := len(pem) - len(begin); i >= 0; i-- {
		if string(pem[i:i+len(begin)]) == begin {
			return pem[i:]
		}
	}
	t.Fatal("no key in bundle")
	return nil
}

// Rotation under load: clients handshake all along while the certificate
// changes; none fails, nothing reloads, and each rotation is served.
func TestCertificateRotationUnderLoad(t *testing.T) {
	l := startLab(t)
	w := newTLSWorld(t)
	ctx := context.Background()
	_, cur := w.issue(testcert.ECDSA, "r.example")
	if _, err := l.d.Apply(ctx, w.config(cur.Name, cur)); err != nil {
		t.Fatal(err)
	}
	base := l.reloads(ctx, t)
	var ok, failed atomic.Int64
	var firstErr atomic.Value
	stop := make(chan struct{})
	var wg sync.WaitGroup
	for range 4 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for {
				select {
				case <-stop:
					return
				default:
				}
				if _, _, err := w.hello("r.example", false, "h2"); err != nil {
					failed.Add(1)
					firstErr.CompareAndSwap(nil, err)
				} else {
					ok.Add(1)
				}
			}
		}()
	}
	const rotations = 10
	for range rotations {
		leaf, next := w.issue(testcert.ECDSA, "r.example")
		if _, err := l.d.Apply(ctx, w.config(next.Name, next)); err != nil {
			t.Fatal(err)
		}
		w.served("r.example", leaf)
	}
	close(stop)
	wg.Wait()
	if failed.Load() > 0 {
		t.Fatalf("%d of %d handshakes failed during rotations (first: %v)", failed.Load(), failed.Load()+ok.Load(), firstErr.Load())
	}
	if ok.Load() == 0 {
		t.Fatal("no handshake completed")
	}
	if got := l.reloads(ctx, t); got != base {
		t.Fatalf("%d reloads for %d rotations", got-base, rotations)
	}
	t.Logf("%d handshakes, %d rotations, 0 failed, 0 reloads", ok.Load(), rotations)
}

// Two frontends share a Secret's certificate: one store, one file, two
// crt-lists; a rotation reaches both; a frontend removed (a reload)
// leaves the other's certificates serving and takes its own files.
func TestCertificateSharedByFrontends(t *testing.T) {
	l := startLab(t)
	w := newTLSWorld(t)
	ctx := context.Background()
	second := uint16(haproxytest.FreePort(t))
	a, ca := w.issue(testcert.ECDSA, "a.example")
	_, cb := w.issue(testcert.ECDSA, "b.example")
	config := func(both bool, a model.Certificate) model.Config {
		cfg := w.config(a.Name, a)
		if both {
			fe := cfg.Frontends[0]
			fe.Name = "fe_https2"
			fe.Binds = []model.Bind{{Addr: netip.MustParseAddr("127.0.0.1"), Port: second}}
			fe.TLS = &model.TLS{Certificates: []model.Certificate{a, cb}, Default: cb.Name, ALPN: []string{"http/1.1"}}
			if cb.Name < a.Name {
				fe.TLS.Certificates = []model.Certificate{cb, a}
			}
			cfg.Frontends = append(cfg.Frontends, fe)
		}
		return cfg
	}
	if _, err := l.d.Apply(ctx, config(true, ca)); err != nil {
		t.Fatal(err)
	}
	addr := w.addr
	other := fmt.Sprintf("127.0.0.1:%d", second)
	servedAt := func(at, sni string, want *x509.Certificate) {
		t.Helper()
		w.addr = at
		defer func() { w.addr = addr }()
		w.served(sni, want)
	}
	servedAt(addr, "a.example", a)
	servedAt(other, "a.example", a)
	base := l.reloads(ctx, t)
	a2, ca2 := w.issue(testcert.ECDSA, "a.example")
	res, err := l.d.Apply(ctx, config(true, ca2))
	if err != nil || res.Reloaded {
		t.Fatalf("rotation: reloaded %v, %v", res.Reloaded, err)
	}
	servedAt(addr, "a.example", a2)
	servedAt(other, "a.example", a2)
	if got := l.reloads(ctx, t); got != base {
		t.Fatalf("%d reloads for a shared rotation", got-base)
	}
	res, err = l.d.Apply(ctx, config(false, ca2))
	if err != nil || !res.Reloaded {
		t.Fatalf("frontend removed: reloaded %v, %v", res.Reloaded, err)
	}
	servedAt(addr, "a.example", a2)
	dir := l.d.opts.Render.CertDir
	for _, gone := range []string{render.CertFile(dir, cb.Name), render.CrtListFile(dir, "fe_https2"), render.DefaultCertFile(dir, "fe_https2")} {
		if _, err := os.Stat(gone); !os.IsNotExist(err) {
			t.Errorf("%s left: %v", gone, err)
		}
	}
	// And the next rotation, on the new worker, needs no reload either.
	a3, ca3 := w.issue(testcert.ECDSA, "a.example")
	if res, err := l.d.Apply(ctx, config(false, ca3)); err != nil || res.Reloaded {
		t.Fatalf("rotation after the reload: reloaded %v, %v", res.Reloaded, err)
	}
	servedAt(addr, "a.example", a3)
}

// A rotation that comes with a structural change the reload gate holds
// back is served at once, not after the reload.
func TestCertificateRotationWhileReloadWaits(t *testing.T) {
	l := startLab(t)
	w := newTLSWorld(t)
	ctx := context.Background()
	_, ca := w.issue(testcert.ECDSA, "a.example")
	_, cb := w.issue(testcert.ECDSA, "b.example")
	if _, err := l.d.Apply(ctx, w.config(ca.Name, ca, cb)); err != nil {
		t.Fatal(err)
	}
	l.d.mu.Lock()
	l.d.gate.minInterval = time.Hour
	l.d.mu.Unlock()
	base := l.reloads(ctx, t)

	// A plain frontend added (a reload, held back) and a rotated and a
	// removed certificate in the same pass.
	a2, ca2 := w.issue(testcert.ECDSA, "a.example")
	cfg := w.config(ca2.Name, ca2)
	plainPort := uint16(haproxytest.FreePort(t))
	cfg.Frontends = append(cfg.Frontends, model.Frontend{Name: "fe_plain", Service: "default/gw", Backend: "be",
		Binds: []model.Bind{{Addr: netip.MustParseAddr("127.0.0.1"), Port: plainPort}}})
	res, err := l.d.Apply(ctx, cfg)
	if !errors.Is(err, driver.ErrDeferred) || res.Reloaded {
		t.Fatalf("structural change: reloaded %v, %v; want it deferred", res.Reloaded, err)
	}
	w.served("a.example", a2)
	if got := l.reloads(ctx, t); got != base {
		t.Fatalf("%d reloads while the gate holds", got-base)
	}

	// The reload, when it comes, keeps the rotated certificate and drops
	// the removed one.
	l.d.mu.Lock()
	l.d.gate.minInterval = 0
	l.d.mu.Unlock()
	if res, err := l.d.Apply(ctx, cfg); err != nil || !res.Reloaded {
		t.Fatalf("the held reload: reloaded %v, %v", res.Reloaded, err)
	}
	w.served("a.example", a2)
	w.served("b.example", a2) // the default now
	if name, err := probeFrom("", fmt.Sprintf("127.0.0.1:%d", plainPort)); err != nil || name != "node-0" {
		t.Fatalf("the new frontend: %q, %v", name, err)
	}
}
