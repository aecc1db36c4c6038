package e2e

import (
	"bytes"
	"crypto/tls"
	"crypto/x509"
	"encoding/json"
	"encoding/pem"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"sync/atomic"
	"testing"

	netv1 "k8s.io/api/networking/v1"

	"github.com/haproxy-k8s-sync/haproxy-k8s-sync/internal/haproxy/haproxytest"
	"github.com/haproxy-k8s-sync/haproxy-k8s-sync/internal/ingress"
)

// clientCertSeen is what the Pod of TestIngressClientCertificateHeaders
// reports of the ssl-client-* headers it received ("" absent).
type clientCertSeen struct {
	Verify, Subject, Issuer, Cert string
}

// clientCertGet sends GET / to host over TLS with client (nil: none) and
// the request headers hdrs ("Name: value"), and decodes the Pod's report
// (a T in JSON).
func clientCertGet[T any](port int, host string, server *x509.Certificate, client *tls.Certificate, hdrs ...string) (T, error) {
	var seen T
	var asked atomic.Bool
	c := mtlsClient(port, host, server, client, &asked) // gateway_mtls_test.go
	req, err := http.NewRequest(http.MethodGet, "https://"+host+"/", nil)
	if err != nil {
		return seen, err
	}
	for _, h := range hdrs {
		n, v, _ := bytes.Cut([]byte(h), []byte(": "))
		req.Header.Set(string(n), string(v))
	}
	resp, err := c.Do(req)
	if err != nil {
		return seen, err
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(resp.Body)
	if resp.StatusCode != http.StatusOK {
		return seen, fmt.Errorf("status %d: %s", resp.StatusCode, body)
	}
	return seen, json.Unmarshal(body, &seen)
}

// TestIngressClientCertificateHeaders: ingress-nginx's headers for the
// client certificate of a verified host, on real HAProxy:
// ssl-client-verify (SUCCESS, NONE without one under optional),
// ssl-client-subject-dn and ssl-client-issuer-dn (RFC 2253), and with
// auth-tls-pass-certificate-to-upstream ssl-client-cert, the URL-escaped
// PEM of the very certificate the client presented. Headers of these
// names a client sends never reach the Pod. Turning the certificate
// header off and on: 0 reloads.
func TestIngressClientCertificateHeaders(t *testing.T) {
	g, ok := newIngressEnv(t)
	if !ok {
		return
	}
	httpsPort := haproxytest.FreePort(t)
	servePod(t, podAddrs[0], 8080, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_ = json.NewEncoder(w).Encode(clientCertSeen{r.Header.Get("ssl-client-verify"), r.Header.Get("ssl-client-subject-dn"),
			r.Header.Get("ssl-client-issuer-dn"), r.Header.Get("ssl-client-cert")})
	}))
	host := "certs.example.com"
	n := ingress.NginxPrefix
	ann := func(pass string) map[string]string {
		return map[string]string{n + "auth-tls-secret": "clients-ca", n + "auth-tls-verify-client": "optional",
			n + "auth-tls-pass-certificate-to-upstream": pass}
	}
	m, leaf := serveVerified(t, g, "certs", host, ann("true"), httpsPort)
	forged := []string{"ssl-client-verify: SUCCESS", "ssl-client-subject-dn: CN=admin", "ssl-client-cert: forged"}
	withCert := func(wantCert bool) func() error {
		return func() error {
			s, err := clientCertGet[clientCertSeen](httpsPort, host, m.server, m.known, forged...)
			if err != nil {
				return err
			}
			if s.Verify != "SUCCESS" || s.Subject != leaf.Subject.String() || s.Issuer != leaf.Issuer.String() {
				return fmt.Errorf("with the CA's certificate the Pod saw %+v; want SUCCESS, %q, %q", s, leaf.Subject, leaf.Issuer)
			}
			if !wantCert {
				if s.Cert != "" {
					return fmt.Errorf("ssl-client-cert %q passed without auth-tls-pass-certificate-to-upstream", s.Cert)
				}
				return nil
			}
			raw, err := url.QueryUnescape(s.Cert)
			if err != nil {
				return fmt.Errorf("ssl-client-cert %q is not URL-escaped: %v", s.Cert, err)
			}
			b, _ := pem.Decode([]byte(raw))
			if b == nil || b.Type != "CERTIFICATE" || !bytes.Equal(b.Bytes, leaf.Raw) {
				return fmt.Errorf("ssl-client-cert %q is not the client's certificate in PEM", s.Cert)
			}
			return nil
		}
	}
	g.eventually("the Pod sees the client's certificate", withCert(true))
	checkAll(t, func() error {
		s, err := clientCertGet[clientCertSeen](httpsPort, host, m.server, nil, forged...)
		if err != nil {
			return err
		}
		if s != (clientCertSeen{Verify: "NONE"}) {
			return fmt.Errorf("without a certificate the Pod saw %+v; want verify NONE and nothing else", s)
		}
		return nil
	})

	before := g.reloads()
	updateIngress(t, g.ing.Ingresses(ns), "certs", func(mod *netv1.Ingress) { mod.Annotations = ann("false") })
	g.eventually("the certificate header turned off", withCert(false))
	updateIngress(t, g.ing.Ingresses(ns), "certs", func(mod *netv1.Ingress) { mod.Annotations = ann("true") })
	g.eventually("the certificate header turned on", withCert(true))
	if r := g.reloads(); r != before {
		t.Errorf("auth-tls-pass-certificate-to-upstream turned off and on reloaded HAProxy %d times, want 0", r-before)
	}
}

// serveVerified serves the Pod's Service hdrs at host through the
// Ingress name with annotations ann, its spec.tls the mTLS fixture's
// Secret, the Secret clients-ca holding the fixture's client CA, and
// starts the controller on httpsPort; leaf is the known client's
// certificate.
func serveVerified(t *testing.T, g *ingressEnv, name, host string, ann map[string]string, httpsPort int) (m mtlsFixture, leaf *x509.Certificate) {
	t.Helper()
	g.httpService("hdrs", podAddrs[0])
	m = g.mTLS(host)
	ing := ingressOf(name, host, ann, prefix("/", "hdrs"))
	ing.Spec.TLS = []netv1.IngressTLS{{Hosts: []string{host}, SecretName: "server"}}
	g.create(ing)
	g.start(fmt.Sprintf("--ingress-https-port=%d", httpsPort))
	leaf, err := x509.ParseCertificate(m.known.Certificate[0])
	if err != nil {
		t.Fatal(err)
	}
	return m, leaf
}
