package e2e

import (
	"crypto/sha1" //nolint:gosec // the fingerprint HAProxy Ingress sends, compared
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
	"testing"

	netv1 "k8s.io/api/networking/v1"

	"github.com/haproxy-k8s-sync/haproxy-k8s-sync/internal/haproxy/haproxytest"
	"github.com/haproxy-k8s-sync/haproxy-k8s-sync/internal/ingress"
)

// haClientCertSeen is what the Pod of TestIngressHAProxyClientCertificates
// reports of HAProxy Ingress's X-SSL-Client-* headers and of ingress-nginx's
// ssl-client-verify (Absent lists the X-SSL-Client-* names not received).
type haClientCertSeen struct {
	CN, DN, SHA1, Cert, NginxVerify string
	Absent                          []string
}

// TestIngressHAProxyClientCertificates: HAProxy Ingress's auth-tls-secret,
// auth-tls-verify-client, auth-tls-strict and auth-tls-cert-header on real
// HAProxy: the Pod gets X-SSL-Client-CN, -DN and -SHA1 as HAProxy
// Ingress sends them (the DN in HAProxy's default form; the SHA-1 of the
// DER in upper-case hex) and with auth-tls-cert-header
// X-SSL-Client-Cert (the DER in base64), never ingress-nginx's
// ssl-client-* headers nor the X-SSL-Client-* a client forged; a client
// without a certificate is served under optional. The certificate header
// turned off and on: 0 reloads.
func TestIngressHAProxyClientCertificates(t *testing.T) {
	g, ok := newIngressEnv(t)
	if !ok {
		return
	}
	httpsPort := haproxytest.FreePort(t)
	names := []string{"X-SSL-Client-CN", "X-SSL-Client-DN", "X-SSL-Client-SHA1", "X-SSL-Client-Cert"}
	servePod(t, podAddrs[0], 8080, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		s := haClientCertSeen{CN: r.Header.Get(names[0]), DN: r.Header.Get(names[1]), SHA1: r.Header.Get(names[2]),
			Cert: r.Header.Get(names[3]), NginxVerify: r.Header.Get("ssl-client-verify")}
		for _, n := range names {
			if _, ok := r.Header[http.CanonicalHeaderKey(n)]; !ok {
				s.Absent = append(s.Absent, n)
			}
		}
		_ = json.NewEncoder(w).Encode(s)
	}))
	host := "hai.example.com"
	p := ingress.HAProxyPrefix
	ann := func(cert string) map[string]string {
		return map[string]string{p + "auth-tls-secret": ns + "/clients-ca", p + "auth-tls-verify-client": "optional",
			p + "auth-tls-strict": "true", p + "auth-tls-cert-header": cert}
	}
	m, leaf := serveVerified(t, g, "hai", host, ann("true"), httpsPort) // ingress_clientcert_test.go
	sum := sha1.Sum(leaf.Raw)                                           //nolint:gosec // compared with what HAProxy sends
	// HAProxy Ingress's %{+Q}: HAProxy quotes nothing in a header.
	want := haClientCertSeen{CN: leaf.Subject.CommonName, DN: "/CN=" + leaf.Subject.CommonName,
		SHA1: strings.ToUpper(hex.EncodeToString(sum[:])), Cert: base64.StdEncoding.EncodeToString(leaf.Raw)}
	forged := []string{"X-SSL-Client-CN: admin", "X-SSL-Client-DN: /CN=admin", "X-SSL-Client-SHA1: 00", "X-SSL-Client-Cert: forged"}
	withCert := func(wantCert bool) func() error {
		return func() error {
			s, err := clientCertGet[haClientCertSeen](httpsPort, host, m.server, m.known, forged...)
			if err != nil {
				return err
			}
			w := want
			if !wantCert {
				w.Cert, w.Absent = "", []string{"X-SSL-Client-Cert"}
			}
			if fmt.Sprint(s) != fmt.Sprint(w) {
				return fmt.Errorf("with the CA's certificate the Pod saw %+v; want %+v", s, w)
			}
			return nil
		}
	}
	g.eventually("the Pod sees HAProxy Ingress's headers of the client's certificate", withCert(true))
	checkAll(t, func() error {
		s, err := clientCertGet[haClientCertSeen](httpsPort, host, m.server, nil, forged...)
		if err != nil {
			return fmt.Errorf("without a certificate under optional: %v", err)
		}
		if s.CN == "admin" || s.DN == "/CN=admin" || s.SHA1 == "00" || s.Cert != "" || s.NginxVerify != "" {
			return fmt.Errorf("without a certificate the Pod saw %+v: a forged header, the certificate or ingress-nginx's header", s)
		}
		t.Logf("without a certificate the Pod saw %+v", s)
		return nil
	})

	before := g.reloads()
	updateIngress(t, g.ing.Ingresses(ns), "hai", func(mod *netv1.Ingress) { mod.Annotations = ann("false") })
	g.eventually("the certificate header turned off", withCert(false))
	updateIngress(t, g.ing.Ingresses(ns), "hai", func(mod *netv1.Ingress) { mod.Annotations = ann("true") })
	g.eventually("the certificate header turned on", withCert(true))
	if r := g.reloads(); r != before {
		t.Errorf("auth-tls-cert-header turned off and on reloaded HAProxy %d times, want 0", r-before)
	}
}
