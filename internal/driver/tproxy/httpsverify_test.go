package tproxy

import (
	"crypto/tls"
	"crypto/x509"
	"fmt"
	"net/netip"
	"strings"
	"testing"
	"time"

	"github.com/haproxy-k8s-sync/haproxy-k8s-sync/internal/model"
	"github.com/haproxy-k8s-sync/haproxy-k8s-sync/internal/render"
	"github.com/haproxy-k8s-sync/haproxy-k8s-sync/internal/spares"
	"github.com/haproxy-k8s-sync/haproxy-k8s-sync/internal/testing/netlab"
	"github.com/haproxy-k8s-sync/haproxy-k8s-sync/internal/testing/testcert"
)

// askHTTPSAs is one GET for host over TLS to dst from ns naming sni,
// presenting cert when it has one: the status line and body, or the
// error of a handshake or connection refused (a client HAProxy turns
// away right after the handshake reads an EOF).
func askHTTPSAs(ns string, dst netip.AddrPort, sni, host string, roots *x509.CertPool, cert *tls.Certificate) (status, body string, err error) {
	c, err := netlab.DialTCP(ns, netip.Addr{}, dst)
	if err != nil {
		return "", "", err
	}
	cfg := &tls.Config{ServerName: sni, RootCAs: roots, NextProtos: []string{"http/1.1"}}
	if cert != nil {
		cfg.Certificates = []tls.Certificate{*cert}
	}
	a, err := testcert.Get(c, cfg, host)
	return a.Status, a.Body, err
}

// TestHTTPSListenerClientValidation: a Gateway behind the fixed HTTPS
// listener turns client certificate validation (AllowValidOnly) on and
// off with no reload, staying behind the listener: its lines verify with
// its CA. With it on, a client of its address is served only with a
// certificate of that CA: none, or another CA's, is refused; a client
// naming the other Gateway's name (whose line asks for nothing) with
// the verifying Gateway's Host is refused too, with or without another
// CA's certificate, and so is one naming a fourth verifying Gateway's
// name with a certificate (the Host must be the server name), and one
// resuming a session of the other Gateway's line; the other Gateway is
// served without one throughout. A third verifying with another CA
// shares the listener too, and a session its line verified, offered
// under the verifying Gateway's name, is refused (the host rules check
// the issuer: render/hostauth.go).
// Fails without the shared verification: a reload each way (the Gateway
// leaves the listener for a frontend of its own).
func TestHTTPSListenerClientValidation(t *testing.T) {
	l := startDPOpts(t, render.ListenersTProxy, spares.Policy{}, true)
	root := testcert.CA(t, "root")
	roots := x509.NewCertPool()
	roots.AddCert(root.Cert)
	clientCA, otherCA := testcert.CA(t, "client CA"), testcert.CA(t, "other CA")
	good, bad := testcert.ClientPair(t, clientCA, "good client"), testcert.ClientPair(t, otherCA, "other client")
	var backends []*model.Backend
	for _, name := range []string{"a", "b"} {
		backends = append(backends, &model.Backend{Name: "gwh_" + name, Balance: "roundrobin", HTTP: true,
			Servers: []model.Server{{Addr: netip.MustParseAddr("127.0.0.1"), Port: httpAnswering(t, l.lab.LB, name)}}})
	}
	one := httpsGateway(t, "gw_default_one_443", []model.Bind{bind(vipA, 443), bind(vipA6, 443)}, "a.example.com", "gwh_a", root)
	two := httpsGateway(t, "gw_default_two_8443", []model.Bind{bind(vipB, 8443)}, "b.example.com", "gwh_b", root)
	// A fourth verifying with the client CA from the start, and a third
	// verifying with the other CA, behind the listener too.
	four := httpsGateway(t, "gw_default_four_7443", []model.Bind{bind(vipB, 7443)}, "d.example.com", "gwh_b", root)
	four.TLS.Client = &model.ClientAuth{CA: model.Name("ca", "default", "one"), CAPEM: clientCA.PEM()}
	three := httpsGateway(t, "gw_default_three_9443", []model.Bind{bind(vipB, 9443)}, "c.example.com", "gwh_b", root)
	three.TLS.Client = &model.ClientAuth{CA: model.Name("ca", "default", "three"), CAPEM: otherCA.PEM()}
	cfgWith := func(verify bool) model.Config {
		f := one
		tlsCopy := *one.TLS
		f.TLS = &tlsCopy
		if verify {
			f.TLS.Client = &model.ClientAuth{CA: model.Name("ca", "default", "one"), CAPEM: clientCA.PEM()}
		}
		return model.Config{Frontends: []model.Frontend{four, f, three, two}, Backends: append(backends, &model.Backend{Name: model.RejectBackend, Balance: "roundrobin"})}
	}
	type req struct {
		dst       netip.AddrPort
		sni, host string
		cert      *tls.Certificate
	}
	ap := netip.AddrPortFrom
	// want: the body, "" for refused, "-" for refused before a request
	// (the handshake, or the connection closed right after it).
	check := func(step string, cases []req, want []string) {
		t.Helper()
		for i, r := range cases {
			err := netlab.Eventually(t.Context(), 5*time.Second, func() error {
				status, body, err := askHTTPSAs(l.lab.Client, r.dst, r.sni, r.host, roots, r.cert)
				switch {
				case want[i] == "-" && status != "":
					return fmt.Errorf("answered %q %q, want the connection refused before a request", status, body)
				case want[i] == "" && strings.Contains(status, " 200 "):
					return fmt.Errorf("answered %q %q, want refused", status, body)
				case want[i] == "" || want[i] == "-":
				case err != nil || body != want[i] || !strings.Contains(status, " 200 "):
					return fmt.Errorf("%q %q (%v), want %q", status, body, err, want[i])
				}
				return nil
			})
			if err != nil {
				t.Errorf("%s: %v %s (host %s, a certificate: %v): %v", step, r.dst, r.sni, r.host, r.cert != nil, err)
			}
		}
	}
	l.apply(t, cfgWith(false))
	plain := []req{
		{ap(vipA, 443), "a.example.com", "a.example.com", nil},
		{ap(vipA6, 443), "a.example.com", "a.example.com", nil},
		{ap(vipB, 8443), "b.example.com", "b.example.com", nil},
	}
	check("no validation", plain, []string{"a", "a", "b"})
	before := l.reloads(t)

	l.apply(t, cfgWith(true))
	if in := l.ropts.HTTPSListened(cfgWith(true)); !in[one.Name] || !in[two.Name] || !in[four.Name] || !in[three.Name] {
		t.Fatalf("listened with validation on: %v, want all four", in)
	}
	check("validation on", []req{
		{ap(vipA, 443), "a.example.com", "a.example.com", good},
		{ap(vipA6, 443), "a.example.com", "a.example.com", good},
		{ap(vipA, 443), "a.example.com", "a.example.com", nil},
		{ap(vipA, 443), "a.example.com", "a.example.com", bad},
		{ap(vipA, 443), "b.example.com", "a.example.com", nil},
		{ap(vipA, 443), "b.example.com", "a.example.com", bad},
		{ap(vipA, 443), "d.example.com", "a.example.com", good},
		{ap(vipB, 8443), "b.example.com", "b.example.com", nil},
		{ap(vipB, 7443), "d.example.com", "d.example.com", good},
		{ap(vipB, 7443), "d.example.com", "d.example.com", nil},
		{ap(vipB, 9443), "c.example.com", "c.example.com", bad},
		{ap(vipB, 9443), "c.example.com", "c.example.com", good},
	}, []string{"a", "a", "-", "-", "-", "-", "", "b", "b", "-", "b", "-"})
	if after := l.reloads(t); after != before {
		t.Errorf("validation turned on cost %d reloads, want 0", after-before)
	}
	// A TLS session of the other Gateway's line (which asks for no
	// certificate) offered to the verifying Gateway's address under its
	// name: resumed, and refused (no certificate in it). And one the
	// third Gateway's line verified with the other CA: resumed, and
	// refused by the host rules' issuer check (421; before it, such a
	// session was served). The listener's one bind resumes a session
	// whatever line made it.
	for _, r := range []struct {
		dst  netip.AddrPort
		sni  string
		cert *tls.Certificate
	}{{ap(vipB, 8443), "b.example.com", nil}, {ap(vipB, 9443), "c.example.com", bad}} {
		status, resumed, err := resumedElsewhere(l.lab.Client, r.dst, r.sni, ap(vipA, 443), "a.example.com", r.cert)
		if strings.Contains(status, " 200 ") || status != "" && !strings.Contains(status, " 421 ") && !strings.Contains(status, " 400 ") {
			t.Errorf("a session of %s offered at a.example.com: %q (resumed %v, %v), want refused", r.sni, status, resumed, err)
		} else {
			t.Logf("a session of %s offered at a.example.com: %q, resumed %v, %v", r.sni, status, resumed, err)
		}
	}

	l.apply(t, cfgWith(false))
	check("validation off again", plain, []string{"a", "a", "b"})
	if after := l.reloads(t); after != before {
		t.Errorf("validation turned on and off cost %d reloads, want 0", after-before)
	}
}

// resumedElsewhere makes a full handshake with dst1 naming sni1 and
// presenting cert, one GET to receive the session, then offers that
// session to dst2 naming sni2, with no certificate, and sends one GET
// for sni2: its status line, whether the session was resumed.
func resumedElsewhere(ns string, dst1 netip.AddrPort, sni1 string, dst2 netip.AddrPort, sni2 string, cert *tls.Certificate) (string, bool, error) {
	cache := &testcert.LastSession{}
	get := func(dst netip.AddrPort, sni string, cert *tls.Certificate) (string, bool, error) {
		c, err := netlab.DialTCP(ns, netip.Addr{}, dst)
		if err != nil {
			return "", false, err
		}
		cfg := &tls.Config{ServerName: sni, InsecureSkipVerify: true, ClientSessionCache: cache, NextProtos: []string{"http/1.1"}} //nolint:gosec // a session offered where it was not made, on purpose
		if cert != nil {
			cfg.Certificates = []tls.Certificate{*cert}
		}
		a, err := testcert.Get(c, cfg, sni)
		return a.Status, a.Resumed, err
	}
	if status, _, err := get(dst1, sni1, cert); !strings.Contains(status, " 200 ") {
		return "", false, fmt.Errorf("the first handshake's request: %q (%v)", status, err)
	}
	if !cache.Has() {
		return "", false, fmt.Errorf("no session received")
	}
	return get(dst2, sni2, nil)
}
