package e2e

import (
	"crypto/tls"
	"fmt"
	"net/http"
	"testing"
	"time"

	netv1 "k8s.io/api/networking/v1"

	"github.com/haproxy-k8s-sync/haproxy-k8s-sync/internal/haproxy/haproxytest"
	"github.com/haproxy-k8s-sync/haproxy-k8s-sync/internal/ingress"
)

// misdirectedGet sends GET / with Host host over a TLS connection that
// named sni, and returns the status.
func misdirectedGet(port int, sni, host string) (int, error) {
	tr := &http.Transport{DisableKeepAlives: true, TLSClientConfig: &tls.Config{ServerName: sni, InsecureSkipVerify: true}} //nolint:gosec // the test's own certificates
	return statusOf(&http.Client{Transport: tr, Timeout: 3 * time.Second}, http.MethodGet, fmt.Sprintf("https://%s:%d/", serviceIP(), port), host, nil)
}

// checkAll reports each case's error.
func checkAll(t *testing.T, cases ...func() error) {
	t.Helper()
	for _, c := range cases {
		if err := c(); err != nil {
			t.Error(err)
		}
	}
}

// TestIngressClientCertificates: ingress-nginx's auth-tls-secret (a
// Secret's ca.crt) and auth-tls-verify-client on real HAProxy, per host:
// a host with "on" refuses in the handshake a client without a
// certificate or with one of another CA and serves one of the CA; a host
// with "optional" serves a client without one and refuses one of
// another CA; a host of the same Secret without the annotation asks
// nothing; a request for the verified host on a connection that named
// the open host: 421. Verification turned on and off on a running
// controller: 0 reloads.
func TestIngressClientCertificates(t *testing.T) {
	g, ok := newIngressEnv(t)
	if !ok {
		return
	}
	httpsPort := haproxytest.FreePort(t)
	g.web("web", 0)
	hosts := []string{"secure.example.com", "opt.example.com", "open.example.com"}
	m := g.mTLS(hosts...)
	n := ingress.NginxPrefix
	withTLS := func(i *netv1.Ingress) *netv1.Ingress {
		i.Spec.TLS = []netv1.IngressTLS{{Hosts: []string{i.Spec.Rules[0].Host}, SecretName: "server"}}
		return i
	}
	g.create(
		withTLS(ingressOf("secure", hosts[0], map[string]string{n + "auth-tls-secret": ns + "/clients-ca"}, prefix("/", "web"))),
		withTLS(ingressOf("opt", hosts[1], map[string]string{n + "auth-tls-secret": "clients-ca", n + "auth-tls-verify-client": "optional"}, prefix("/", "web"))),
		withTLS(ingressOf("open", hosts[2], nil, prefix("/", "web"))),
	)
	g.start(fmt.Sprintf("--ingress-https-port=%d", httpsPort))
	served := func(host string, client *tls.Certificate) func() error {
		return func() error {
			code, _, err := mtlsGet(httpsPort, host, m.server, client)
			if err != nil || code != http.StatusOK {
				return fmt.Errorf("%s: %d, %v; want 200", host, code, err)
			}
			return nil
		}
	}
	refused := func(host string, client *tls.Certificate) func() error {
		return func() error {
			if code, _, err := mtlsGet(httpsPort, host, m.server, client); err == nil {
				return fmt.Errorf("%s: answered %d, want the handshake refused", host, code)
			}
			return nil
		}
	}
	g.eventually("the open host serves", served(hosts[2], nil))
	g.eventually("the verified host serves the CA's client", served(hosts[0], m.known))
	checkAll(t,
		refused(hosts[0], nil), refused(hosts[0], m.unknown),
		served(hosts[1], nil), served(hosts[1], m.known), refused(hosts[1], m.unknown),
		served(hosts[2], m.unknown),
		func() error {
			if code, err := misdirectedGet(httpsPort, hosts[2], hosts[0]); err != nil || code != http.StatusMisdirectedRequest {
				return fmt.Errorf("Host %s on a connection naming %s: %d, %v; want 421", hosts[0], hosts[2], code, err)
			}
			return nil
		},
	)
	before := g.reloads()
	updateIngress(t, g.ing.Ingresses(ns), "open", func(mod *netv1.Ingress) {
		mod.Annotations = map[string]string{n + "auth-tls-secret": "clients-ca"}
	})
	g.eventually("verification turned on", refused(hosts[2], nil))
	checkAll(t, served(hosts[2], m.known))
	updateIngress(t, g.ing.Ingresses(ns), "open", func(mod *netv1.Ingress) {
		mod.Annotations = map[string]string{n + "auth-tls-secret": "clients-ca", n + "auth-tls-verify-client": "off"}
	})
	g.eventually("verification turned off", served(hosts[2], nil))
	if r := g.reloads(); r != before {
		t.Errorf("client verification turned on and off reloaded HAProxy %d times, want 0", r-before)
	}
}
