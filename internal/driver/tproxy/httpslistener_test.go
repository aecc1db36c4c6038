package tproxy

import (
	"crypto/tls"
	"crypto/x509"
	"fmt"
	"net/netip"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/haproxy-k8s-sync/haproxy-k8s-sync/internal/certs"
	"github.com/haproxy-k8s-sync/haproxy-k8s-sync/internal/model"
	"github.com/haproxy-k8s-sync/haproxy-k8s-sync/internal/render"
	"github.com/haproxy-k8s-sync/haproxy-k8s-sync/internal/spares"
	"github.com/haproxy-k8s-sync/haproxy-k8s-sync/internal/testing/netlab"
	"github.com/haproxy-k8s-sync/haproxy-k8s-sync/internal/testing/testcert"
)

// askHTTPS makes a TLS connection to dst from ns naming sni (verified
// against roots unless nil), offering alpn, and, when it agreed on no h2,
// sends one GET for host (testcert.Get).
func askHTTPS(ns string, dst netip.AddrPort, sni, host string, roots *x509.CertPool, alpn ...string) (testcert.Answer, error) {
	c, err := netlab.DialTCP(ns, netip.Addr{}, dst)
	if err != nil {
		return testcert.Answer{}, err
	}
	return testcert.Get(c, &tls.Config{ServerName: sni, RootCAs: roots, InsecureSkipVerify: roots == nil, NextProtos: alpn}, host) //nolint:gosec // the unknown name's answer is read, not trusted
}

// httpsGateway is httpGateway terminating TLS with one certificate for
// its one host, issued by root.
func httpsGateway(t *testing.T, name string, binds []model.Bind, host, be string, root testcert.Cert) model.Frontend {
	t.Helper()
	f := httpGateway(name, binds, map[string][][2]string{host: {{"/", be}}})
	f.HTTP.Listeners = []string{host}
	c := testcert.Issue(t, testcert.Spec{DNS: []string{host}}, root)
	b, err := certs.Parse(c.PEM(), c.KeyPEM(t), c.Cert.NotBefore)
	if err != nil {
		t.Fatal(err)
	}
	cert := model.Certificate{Name: model.Name("cert", "default", name), SNI: []string{host}, PEM: b.PEM}
	f.TLS = &model.TLS{Certificates: []model.Certificate{cert}, Default: cert.Name, ALPN: []string{"h2", "http/1.1"}}
	return f
}

// TestHTTPSListenerNewGateway: two HTTPS Gateways on two addresses, with
// their own certificates, are served through the one fixed HTTPS listener
// (clients of both families, each verifying its Gateway's certificate by
// its exact name; h2 offered as their own frontends offer it); a name no
// line has gets the controller's default certificate, not theirs; the
// second Gateway, added, is served with no reload, and its removal is no
// reload either. Fails without the listener: 1 reload each.
func TestHTTPSListenerNewGateway(t *testing.T) {
	l := startDPOpts(t, render.ListenersTProxy, spares.Policy{}, true)
	if !l.ropts.HTTPSListener() {
		t.Fatal("the lab's options have no HTTPS listener")
	}
	root := testcert.CA(t, "root")
	roots := x509.NewCertPool()
	roots.AddCert(root.Cert)
	var backends []*model.Backend
	for _, name := range []string{"a", "b"} {
		backends = append(backends, &model.Backend{Name: "gwh_" + name, Balance: "roundrobin", HTTP: true,
			Servers: []model.Server{{Addr: netip.MustParseAddr("127.0.0.1"), Port: httpAnswering(t, l.lab.LB, name)}}})
	}
	one := httpsGateway(t, "gw_default_one_443", []model.Bind{bind(vipA, 443), bind(vipA6, 443)}, "a.example.com", "gwh_a", root)
	cfg := model.Config{Frontends: []model.Frontend{one}, Backends: append(backends, &model.Backend{Name: model.RejectBackend, Balance: "roundrobin"})}
	l.apply(t, cfg)

	type req struct {
		dst       netip.AddrPort
		sni, host string
	}
	ap := netip.AddrPortFrom
	check := func(cases map[req]string) {
		t.Helper()
		for r, want := range cases {
			err := netlab.Eventually(t.Context(), 5*time.Second, func() error {
				a, err := askHTTPS(l.lab.Client, r.dst, r.sni, r.host, roots, "http/1.1")
				if want == "" {
					if err == nil {
						return fmt.Errorf("%v: answered %+v, want refused", r, a)
					}
					return nil
				}
				if err != nil || a.Body != want || !strings.Contains(a.Status, " 200 ") {
					return fmt.Errorf("%v: %+v (%v), want %q", r, a, err, want)
				}
				return nil
			})
			if err != nil {
				t.Error(err)
			}
		}
	}
	check(map[req]string{
		{ap(vipA, 443), "a.example.com", "a.example.com"}:  "a",
		{ap(vipA6, 443), "a.example.com", "a.example.com"}: "a",
		{ap(vipB, 8443), "b.example.com", "b.example.com"}: "",
	})
	unknown := func(dst netip.AddrPort) {
		t.Helper()
		a, err := askHTTPS(l.lab.Client, dst, "unknown.example.org", "a.example.com", nil, "http/1.1")
		if err != nil || slices.Contains(a.Names, "a.example.com") || slices.Contains(a.Names, "b.example.com") {
			t.Errorf("an unknown name at %v: certificate for %v (%v), want the listener's default", dst, a.Names, err)
		}
	}
	unknown(ap(vipA, 443))
	if a, err := askHTTPS(l.lab.Client, ap(vipA, 443), "a.example.com", "", roots, "h2", "http/1.1"); err != nil || a.ALPN != "h2" {
		t.Errorf("ALPN h2 offered: agreed %q (%v), want h2", a.ALPN, err)
	}

	before := l.reloads(t)
	two := httpsGateway(t, "gw_default_two_8443", []model.Bind{bind(vipB, 8443)}, "b.example.com", "gwh_b", root)
	more := cfg
	more.Frontends = []model.Frontend{one, two}
	l.apply(t, more)
	check(map[req]string{
		{ap(vipB, 8443), "b.example.com", "b.example.com"}: "b",
		{ap(vipA, 443), "a.example.com", "a.example.com"}:  "a",
		{ap(vipA6, 443), "a.example.com", "a.example.com"}: "a",
	})
	// The host is looked up under the connection's key: b's name at a's
	// address is no route of a's.
	if a, err := askHTTPS(l.lab.Client, ap(vipA, 443), "b.example.com", "b.example.com", roots, "http/1.1"); err != nil || strings.Contains(a.Status, " 200 ") {
		t.Errorf("b's host at a's address: %+v (%v), want no route", a, err)
	}
	unknown(ap(vipB, 8443))
	if after := l.reloads(t); after != before {
		t.Errorf("the second HTTPS Gateway cost %d reloads, want 0", after-before)
	}

	l.apply(t, cfg)
	check(map[req]string{{ap(vipB, 8443), "b.example.com", "b.example.com"}: "", {ap(vipA, 443), "a.example.com", "a.example.com"}: "a"})
	if after := l.reloads(t); after != before {
		t.Errorf("the second HTTPS Gateway's removal cost %d reloads, want 0", after-before)
	}
}
