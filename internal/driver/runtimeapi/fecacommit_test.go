package runtimeapi

import (
	"context"
	"crypto/tls"
	"fmt"
	"net"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/haproxy-k8s-sync/haproxy-k8s-sync/internal/certs"
	"github.com/haproxy-k8s-sync/haproxy-k8s-sync/internal/haproxy"
	"github.com/haproxy-k8s-sync/haproxy-k8s-sync/internal/model"
	"github.com/haproxy-k8s-sync/haproxy-k8s-sync/internal/testing/testcert"
)

// TestFrontendCertAndCAFileCommits records whether the frontend side is
// exposed to haproxy/haproxy#3165 (docs/gateway.md, "One kind of commit
// per worker" is the backend side's rule; "Verification per crt-list
// line"): a crt-list line verifying with a CA file F created at runtime
// (as render/clientauth.go and cafiles.go drive it), then, with no
// reload: F committed with another bundle, a certificate of another
// frontend rotated, the line's certificate rotated (`set ssl cert` +
// `commit ssl cert`), F committed again, the certificate rotated again,
// the other frontend's again, F a third time. Where the line's rotation
// is not served (haproxy/haproxy#3165: 2.6.12, 3.0.11) the run asserts
// that and stops before the commit that kills the worker. After each step: the worker is the same
// process and answers, the line serves the certificate committed last,
// and its clients are verified with the bundle committed last; a little
// load (requests without SNI on both frontends) runs throughout and none
// fails.
func TestFrontendCertAndCAFileCommits(t *testing.T) {
	dir := t.TempDir()
	ctx := context.Background()
	srvCA, caA, caB := testcert.CA(t, "server CA"), testcert.CA(t, "client CA a"), testcert.CA(t, "client CA b")
	pemOf := func(cn, host string) []byte {
		c := testcert.Issue(t, testcert.Spec{CN: cn, DNS: []string{host}}, srvCA)
		return append(c.PEM(), c.KeyPEM(t)...)
	}
	clients := map[string]*tls.Certificate{"none": nil, "a": testcert.ClientPair(t, caA, "client"), "b": testcert.ClientPair(t, caB, "client")}

	// fe1: a.example's line verifies with F; fe2: b.example's line, no
	// verification. Both lines and their certificates are added at
	// runtime, as the driver adds a host's.
	lab := startCrtLists(t, dir,
		crtListFrontend{name: "fe1", defaultPEM: pemOf("fe1 default", "default.example"), filter: " !*"},
		crtListFrontend{name: "fe2", defaultPEM: pemOf("fe2 default", "default.example"), filter: " !*"})
	p, addr := lab.p, lab.addr
	run := func(step string, cmds ...haproxy.Command) {
		t.Helper()
		lab.exec(t, step, cmds...)
	}
	master := haproxy.NewMaster(p.MasterSocket)
	workers := func() []int {
		t.Helper()
		pr, err := master.ShowProc(ctx)
		if err != nil {
			t.Fatalf("show proc: %v (the master gone with its worker?)", err)
		}
		return pr.Workers
	}

	certA, certB, caFile := filepath.Join(dir, "a.pem"), filepath.Join(dir, "b.pem"), filepath.Join(dir, "cca.pem")
	create := slices.Concat(sslNew("cert", certA, pemOf("a v1", "a.example")), sslNew("cert", certB, pemOf("b v1", "b.example")),
		sslNew("ca-file", caFile, caA.PEM()), []haproxy.Command{
			{Line: "add ssl crt-list " + lab.list("fe1"), Payload: []byte(certA + " [verify required ca-file " + caFile + " no-ca-names] a.example")},
			{Line: "add ssl crt-list " + lab.list("fe2"), Payload: []byte(certB + " b.example")}})
	run("create", create...)
	start := workers()
	if len(start) != 1 {
		t.Fatalf("workers %v, want one", start)
	}

	// The load: requests without SNI (the default lines) on both
	// frontends, one at a time, until the end.
	var sent, failed atomic.Int64
	stop := make(chan struct{})
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		for i := 0; i < 100000; i++ {
			select {
			case <-stop:
				return
			default:
			}
			for _, fe := range []string{"fe1", "fe2"} {
				sent.Add(1)
				if got, _ := servedProbe(addr[fe], "", nil); got != "200" {
					failed.Add(1)
				}
			}
		}
	}()
	halt := sync.OnceFunc(func() { close(stop); wg.Wait() })
	t.Cleanup(halt)

	// check polls (a commit applies to new handshakes at once; the
	// deadline only bounds the wait) until a.example on fe1 serves
	// subject cnA and lets in the clients of ok only, and b.example on
	// fe2 serves cnB to anyone; then the worker must be the one started.
	check := func(step, cnA, ok, cnB string) {
		t.Helper()
		var last string
		for end := time.Now().Add(5 * time.Second); time.Now().Before(end); time.Sleep(50 * time.Millisecond) {
			last = ""
			for _, c := range []string{"none", "a", "b"} {
				want := "refused+asked"
				if c == ok {
					want = "200+asked"
				}
				got, cn := servedProbe(addr["fe1"], "a.example", clients[c])
				if got != want || cn != cnA {
					last += fmt.Sprintf("\n\tfe1 a.example client %s: %s serving %q, want %s serving %q", c, got, cn, want, cnA)
				}
			}
			if got, cn := servedProbe(addr["fe2"], "b.example", nil); got != "200" || cn != cnB {
				last += fmt.Sprintf("\n\tfe2 b.example: %s serving %q, want 200 serving %q", got, cn, cnB)
			}
			if last == "" {
				break
			}
		}
		if w := workers(); !slices.Equal(w, start) {
			t.Fatalf("%s: workers %v, want %v (the worker died)\n%s", step, w, start, p.Output())
		}
		if last != "" {
			t.Fatalf("%s:%s", step, last)
		}
	}
	setCA := func(ca testcert.Cert) []haproxy.Command { return sslSet("ca-file", caFile, ca.PEM()) }
	setCert := func(path, cn, host string) []haproxy.Command { return sslSet("cert", path, pemOf(cn, host)) }
	// Each step's commands, then what fe1 and fe2 must serve (check).
	type step struct {
		name        string
		cmds        []haproxy.Command
		cnA, ok, cb string
	}
	steps := func(ss ...step) {
		t.Helper()
		for _, s := range ss {
			if s.cmds != nil {
				run(s.name, s.cmds...)
			}
			check(s.name, s.cnA, s.ok, s.cb)
		}
	}
	steps(
		step{"created", nil, "a v1", "a", "b v1"},
		step{"F committed (CA b)", setCA(caB), "a v1", "b", "b v1"},
		step{"b.example (another frontend) rotated after F's commit", setCert(certB, "b v2", "b.example"), "a v1", "b", "b v2"},
	)
	run("a v2", setCert(certA, "a v2", "a.example")...)
	if !servesWithin(addr["fe1"], clients["b"], "a v2", 2*time.Second) {
		// haproxy/haproxy#3165 (2.6.12, 3.0.11): the commit answered
		// Success and the line goes on serving the old certificate; the
		// next commit of F kills the worker, so the run stops here.
		check("a.example rotated after F's commit (haproxy/haproxy#3165: the old certificate)", "a v1", "b", "b v2")
		loadOK(t, halt, &sent, &failed)
		t.Logf("haproxy/haproxy#3165 present: a certificate committed after its line's CA file was committed is not served (frontcommits.go reloads instead)")
		return
	}
	steps(
		step{"a.example rotated after F's commit", nil, "a v2", "b", "b v2"},
		step{"F committed again (CA a) after a rotation", setCA(caA), "a v2", "a", "b v2"},
		step{"a.example rotated again", setCert(certA, "a v3", "a.example"), "a v3", "a", "b v2"},
		step{"b.example (another frontend) rotated after F's commits", setCert(certB, "b v3", "b.example"), "a v3", "a", "b v3"},
		step{"F committed a third time", setCA(caB), "a v3", "b", "b v3"},
	)

	loadOK(t, halt, &sent, &failed)
}

// loadOK stops the load (halt) and checks that some requests were sent
// and none failed.
func loadOK(t *testing.T, halt func(), sent, failed *atomic.Int64) {
	t.Helper()
	halt()
	t.Logf("load: %d requests without SNI, %d failed", sent.Load(), failed.Load())
	if sent.Load() == 0 || failed.Load() != 0 {
		t.Errorf("load: %d of %d requests failed, want 0 of some", failed.Load(), sent.Load())
	}
}

// servesWithin reports whether addr serves a.example's certificate of
// common name cn to client within d.
func servesWithin(addr string, client *tls.Certificate, cn string, d time.Duration) bool {
	for end := time.Now().Add(d); time.Now().Before(end); time.Sleep(50 * time.Millisecond) {
		if _, got := servedProbe(addr, "a.example", client); got == cn {
			return true
		}
	}
	return false
}

// TestFrontendCommitsOneKindPerWorker: the driver's side of the above.
// A frontend verifying its clients (AllowValidOnly) has its line's
// certificate and its CA file changed in turn: a change of the kind the
// worker already took is a commit, no reload; the other kind, or both at
// once, is one reload (frontcommits.go). After each step the line serves
// the newest certificate and verifies with the newest CA. Without the
// rule, a certificate after a CA commit is committed (no reload) and, on
// 2.6.12 and 3.0.11, not served.
func TestFrontendCommitsOneKindPerWorker(t *testing.T) {
	l := startLab(t)
	w := newTLSWorld(t)
	ctx := context.Background()
	cas := map[string]testcert.Cert{"a": testcert.CA(t, "client CA a"), "b": testcert.CA(t, "client CA b")}
	clients := map[string]*tls.Certificate{"a": testcert.ClientPair(t, cas["a"], "client"), "b": testcert.ClientPair(t, cas["b"], "client")}
	issued := map[string]model.Certificate{}
	issue := func(cn string) model.Certificate {
		if c, ok := issued[cn]; ok {
			return c
		}
		c := testcert.Issue(t, testcert.Spec{CN: cn, DNS: []string{"a.example"}}, w.inter)
		b, err := certs.Parse(append(c.PEM(), w.inter.PEM()...), c.KeyPEM(t), time.Now())
		if err != nil {
			t.Fatal(err)
		}
		issued[cn] = model.Certificate{Name: model.Name("cert", "default", "a.example"), SNI: b.Names, PEM: b.PEM}
		return issued[cn]
	}
	steps := []struct {
		name, cn, ca string
		reload       bool
	}{
		{"first", "v1", "a", true},
		{"CA b: a CA commit", "v1", "b", false},
		{"certificate after a CA commit", "v2", "b", true},
		{"CA a on a fresh worker", "v2", "a", false},
		{"certificate after a CA commit again", "v3", "a", true},
		{"certificate on a worker that took none", "v4", "a", false},
		{"CA after a certificate commit", "v4", "b", true},
		{"both at once", "v5", "a", true},
	}
	for _, s := range steps {
		cert := issue(s.cn)
		cfg := w.config(cert.Name, cert)
		cfg.Frontends[0].TLS.Client = &model.ClientAuth{CA: "cca_default_gw_443", CAPEM: cas[s.ca].PEM()}
		var reloaded bool
		for i := 0; i < 3; i++ { // a pass that holds a file back asks for the next (Again), which reloads
			res, err := l.d.Apply(ctx, cfg)
			if err != nil {
				t.Fatalf("%s: %v", s.name, err)
			}
			reloaded = reloaded || res.Reloaded
			if res.Again == 0 {
				break
			}
		}
		if reloaded != s.reload {
			t.Errorf("%s: reloaded %v, want %v", s.name, reloaded, s.reload)
		}
		other := map[string]string{"a": "b", "b": "a"}[s.ca]
		var last string
		for end := time.Now().Add(5 * time.Second); time.Now().Before(end); time.Sleep(50 * time.Millisecond) {
			last = ""
			if got, cn := servedProbe(w.addr, "a.example", clients[s.ca]); got != "200+asked" || cn != s.cn {
				last += fmt.Sprintf(" client %s: %s serving %q, want 200+asked serving %q;", s.ca, got, cn, s.cn)
			}
			if got, _ := servedProbe(w.addr, "a.example", clients[other]); got != "refused+asked" {
				last += fmt.Sprintf(" client %s: %s, want refused+asked;", other, got)
			}
			if last == "" {
				break
			}
		}
		if last != "" {
			t.Fatalf("%s:%s", s.name, last)
		}
	}
}

// servedProbe is tlsProbe (crtlistverify_test.go) that also says the
// common name of the certificate the server presented ("" none).
func servedProbe(addr, sni string, cert *tls.Certificate) (string, string) {
	var asked atomic.Bool
	var cn string
	c := &tls.Config{ServerName: sni, InsecureSkipVerify: true, //nolint:gosec // the certificate is read, not trusted
		VerifyConnection: func(cs tls.ConnectionState) error { // before the client's certificate: a refused client too
			if len(cs.PeerCertificates) > 0 {
				cn = cs.PeerCertificates[0].Subject.CommonName
			}
			return nil
		},
		GetClientCertificate: func(*tls.CertificateRequestInfo) (*tls.Certificate, error) {
			asked.Store(true)
			if cert == nil {
				return &tls.Certificate{}, nil
			}
			return cert, nil
		}}
	res := "refused"
	if conn, err := net.DialTimeout("tcp", addr, 2*time.Second); err == nil {
		if a, err := testcert.Get(conn, c, "x"); err == nil && (strings.HasPrefix(a.Status, "HTTP/1.1 200") || strings.HasPrefix(a.Status, "node-")) {
			res = "200"
		}
	}
	if asked.Load() {
		res += "+asked"
	}
	return res, cn
}
