package runtimeapi

import (
	"context"
	"crypto/tls"
	"fmt"
	"io"
	"net"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/haproxy-k8s-sync/haproxy-k8s-sync/internal/haproxy"
	"github.com/haproxy-k8s-sync/haproxy-k8s-sync/internal/haproxy/haproxytest"
	"github.com/haproxy-k8s-sync/haproxy-k8s-sync/internal/testing/testcert"
)

// TestFrontendCertAndCAFileCommits records whether the frontend side is
// exposed to haproxy/haproxy#3165 (docs/gateway.md, "One kind of commit
// per worker" is the backend side's rule; "Verification per crt-list
// line"): a crt-list line verifying with a CA file F created at runtime
// (as render/clientauth.go and cafiles.go drive it), then, with no
// reload: F committed with another bundle, the line's certificate rotated
// (`set ssl cert` + `commit ssl cert`), F committed again, the
// certificate rotated again, and a certificate of another frontend
// rotated after F's commits. After each step: the worker is the same
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
	clients := map[string]*tls.Certificate{"none": nil, "a": clientPair(t, caA), "b": clientPair(t, caB)} // crtlistverify_test.go

	// fe1: a.example's line verifies with F; fe2: b.example's line, no
	// verification. Both lines and their certificates are added at
	// runtime, as the driver adds a host's.
	addr := map[string]string{}
	cfg := haproxytest.MinimalConfig(dir)
	for _, fe := range []string{"fe1", "fe2"} {
		def, list := filepath.Join(dir, fe+".default.pem"), filepath.Join(dir, fe+".crtlist")
		writeFile(t, def, pemOf(fe+" default", "default.example"))
		writeFile(t, list, []byte(def+" !*\n"))
		addr[fe] = fmt.Sprintf("127.0.0.1:%d", haproxytest.FreePort(t))
		cfg += fmt.Sprintf("\nfrontend %s\n    mode http\n    bind %s ssl crt-list %s\n    http-request return status 200 content-type text/plain string ok\n",
			fe, addr[fe], list)
	}
	cfgPath := filepath.Join(dir, "haproxy.cfg")
	writeFile(t, cfgPath, []byte(cfg))
	p := haproxytest.Start(t, dir, cfgPath)
	rt := haproxy.NewRuntime(p.StatsSocket)
	t.Cleanup(func() { _ = rt.Close() })
	run := func(step string, cmds ...haproxy.Command) {
		t.Helper()
		ans, err := rt.ExecCommands(ctx, cmds)
		if err != nil {
			t.Fatalf("%s: %v", step, err)
		}
		for i, a := range ans {
			if strings.Contains(strings.ToLower(a), "error") || strings.Contains(a, "Can't") || strings.Contains(a, "failed") {
				t.Fatalf("%s: %q answered %q", step, cmds[i].Line, a)
			}
		}
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
	run("create", haproxy.Command{Line: "new ssl cert " + certA}, haproxy.Command{Line: "set ssl cert " + certA, Payload: pemOf("a v1", "a.example")},
		haproxy.Command{Line: "commit ssl cert " + certA},
		haproxy.Command{Line: "new ssl cert " + certB}, haproxy.Command{Line: "set ssl cert " + certB, Payload: pemOf("b v1", "b.example")},
		haproxy.Command{Line: "commit ssl cert " + certB},
		haproxy.Command{Line: "new ssl ca-file " + caFile}, haproxy.Command{Line: "set ssl ca-file " + caFile, Payload: caA.PEM()},
		haproxy.Command{Line: "commit ssl ca-file " + caFile},
		haproxy.Command{Line: "add ssl crt-list " + filepath.Join(dir, "fe1.crtlist"), Payload: []byte(certA + " [verify required ca-file " + caFile + " no-ca-names] a.example")},
		haproxy.Command{Line: "add ssl crt-list " + filepath.Join(dir, "fe2.crtlist"), Payload: []byte(certB + " b.example")})
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
			t.Errorf("%s:%s", step, last)
		}
	}
	setCA := func(ca testcert.Cert) []haproxy.Command {
		return []haproxy.Command{{Line: "set ssl ca-file " + caFile, Payload: ca.PEM()}, {Line: "commit ssl ca-file " + caFile}}
	}
	setCert := func(path string, pem []byte) []haproxy.Command {
		return []haproxy.Command{{Line: "set ssl cert " + path, Payload: pem}, {Line: "commit ssl cert " + path}}
	}

	check("created", "a v1", "a", "b v1")
	run("F <- b", setCA(caB)...)
	check("F committed (CA b)", "a v1", "b", "b v1")
	run("a v2", setCert(certA, pemOf("a v2", "a.example"))...)
	check("a.example rotated after F's commit", "a v2", "b", "b v1")
	run("F <- a", setCA(caA)...)
	check("F committed again (CA a) after a rotation", "a v2", "a", "b v1")
	run("a v3", setCert(certA, pemOf("a v3", "a.example"))...)
	check("a.example rotated again", "a v3", "a", "b v1")
	run("b v2", setCert(certB, pemOf("b v2", "b.example"))...)
	check("b.example (another frontend) rotated after F's commits", "a v3", "a", "b v2")
	run("F <- b again", setCA(caB)...)
	check("F committed a third time", "a v3", "b", "b v2")

	halt()
	t.Logf("load: %d requests without SNI, %d failed", sent.Load(), failed.Load())
	if sent.Load() == 0 || failed.Load() != 0 {
		t.Errorf("load: %d of %d requests failed, want 0 of some", failed.Load(), sent.Load())
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
	if conn, err := tls.DialWithDialer(&net.Dialer{Timeout: 2 * time.Second}, "tcp", addr, c); err == nil {
		_ = conn.SetDeadline(time.Now().Add(2 * time.Second))
		_, _ = io.WriteString(conn, "GET / HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n")
		if got, err := io.ReadAll(conn); err == nil && strings.HasPrefix(string(got), "HTTP/1.1 200") {
			res = "200"
		}
		conn.Close()
	}
	if asked.Load() {
		res += "+asked"
	}
	return res, cn
}
