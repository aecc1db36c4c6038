package render

import (
	"crypto/tls"
	"fmt"
	"io"
	"net"
	"net/netip"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/haproxy-k8s-sync/haproxy-k8s-sync/internal/haproxy/haproxytest"
	"github.com/haproxy-k8s-sync/haproxy-k8s-sync/internal/model"
	"github.com/haproxy-k8s-sync/haproxy-k8s-sync/internal/plan"
	"github.com/haproxy-k8s-sync/haproxy-k8s-sync/internal/testing/testcert"
)

// TestHostRequiredRefusesResumedSession (real HAProxy): a host whose
// line requires a client certificate (an Ingress's auth-tls) and one
// whose line asks for none on one frontend. A client resuming, under
// the first host's name, the TLS session it made under the second's,
// carries no certificate: HAProxy resumes it whatever line made it, and
// the host's rule refuses it (400); a client with a certificate of the
// host's CA passes that rule. Without HostRequired's rule the resumed
// session went through (measured: ssl_c_used 0, ssl_fc_is_resumed 1).
func TestHostRequiredRefusesResumedSession(t *testing.T) {
	dir := t.TempDir()
	clientCA := testcert.CA(t, "clients")
	cfg := terminating(t) // tls_test.go
	cfg.Frontends = cfg.Frontends[:1]
	f := &cfg.Frontends[0]
	port := uint16(haproxytest.FreePort(t))
	f.Binds = []model.Bind{{Addr: netip.MustParseAddr("127.0.0.1"), Port: port}}
	f.HTTP = model.Shaped(&model.HTTP{Port: port})
	tlsCopy := *f.TLS
	tlsCopy.ALPN = []string{"http/1.1"}
	tlsCopy.Certificates = tlsCopy.Certificates[:2]
	tlsCopy.Certificates[0].Client = &model.ClientAuth{CA: "cca_a", CAPEM: clientCA.PEM()}
	f.TLS = &tlsCopy
	o := opts
	o.CertDir, o.ACLDir = dir, dir
	o.StatsSocket, o.StateFile, o.MaxConn = haproxytest.StatsSocketPath(dir), filepath.Join(dir, "state"), 1000
	layout, _ := plan.Assign(cfg, nil, true)
	writeTLSFiles(t, cfg, o, map[string][]byte{CAFile(dir, "cca_a"): clientCA.PEM(), ClientAuthMapFile(dir): MapContent(HostClientAuthEntries(o, *f))}) // clientauth_test.go
	writeHTTPMapFiles(t, dir, *f)
	cfgPath := filepath.Join(dir, "haproxy.cfg")
	if err := os.WriteFile(cfgPath, Config(cfg, layout, o), 0o644); err != nil {
		t.Fatal(err)
	}
	haproxytest.Start(t, dir, cfgPath)

	cache := &testcert.LastSession{}
	get := func(sni string, cert *tls.Certificate) (status string, resumed bool, err error) {
		c, err := net.DialTimeout("tcp", fmt.Sprintf("127.0.0.1:%d", port), 3*time.Second)
		if err != nil {
			return "", false, err
		}
		defer c.Close()
		_ = c.SetDeadline(time.Now().Add(3 * time.Second))
		tcfg := &tls.Config{ServerName: sni, InsecureSkipVerify: true, ClientSessionCache: cache, NextProtos: []string{"http/1.1"}} //nolint:gosec // sessions offered where they were not made, on purpose
		if cert != nil {
			tcfg.Certificates = []tls.Certificate{*cert}
		}
		tc := tls.Client(c, tcfg)
		if err := tc.Handshake(); err != nil {
			return "", false, err
		}
		if _, err := io.WriteString(tc, "GET / HTTP/1.1\r\nHost: "+sni+"\r\nConnection: close\r\n\r\n"); err != nil {
			return "", false, err
		}
		all, err := io.ReadAll(tc)
		status, _, _ = strings.Cut(string(all), "\r\n")
		return status, tc.ConnectionState().DidResume, err
	}
	if status, _, err := get("b.example", nil); status == "" || strings.Contains(status, " 400 ") {
		t.Fatalf("b.example without a certificate: %q (%v), want an answer past the host rules", status, err)
	}
	status, resumed, err := get("a.example", nil)
	if !strings.Contains(status, " 400 ") {
		t.Errorf("a.example resuming b.example's session, no certificate: %q (resumed %v, %v), want 400", status, resumed, err)
	}
	cache.Forget()
	c := testcert.Issue(t, testcert.Spec{CN: "client", Client: true}, clientCA)
	pair, perr := tls.X509KeyPair(c.PEM(), c.KeyPEM(t))
	if perr != nil {
		t.Fatal(perr)
	}
	if status, _, err := get("a.example", &pair); status == "" || strings.Contains(status, " 400 ") {
		t.Errorf("a.example with the CA's certificate: %q (%v), want an answer past the host rules", status, err)
	}
}
