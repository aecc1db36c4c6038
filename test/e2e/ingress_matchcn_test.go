package e2e

import (
	"crypto/tls"
	"fmt"
	"net/http"
	"testing"

	netv1 "k8s.io/api/networking/v1"

	"github.com/haproxy-k8s-sync/haproxy-k8s-sync/internal/haproxy/haproxytest"
	"github.com/haproxy-k8s-sync/haproxy-k8s-sync/internal/ingress"
	"github.com/haproxy-k8s-sync/haproxy-k8s-sync/internal/testing/testcert"
)

// TestIngressClientCertificateMatchCN: ingress-nginx's auth-tls-match-cn
// on real HAProxy: with auth-tls-secret, a client whose verified
// certificate's subject (RFC 2253: CN=alice) matches is served, one of
// the same CA whose subject does not is answered 403, and under
// "optional" a client without a certificate 403; the expression changed
// (anchored, then an alternation) and removed reloads nothing; one that
// could blow up the matcher ((a+)+) is refused with an Event and the
// last good expression keeps applying. Its rules are written while some
// Ingress of the frontend has an expression: the first is one reload,
// the second none.
func TestIngressClientCertificateMatchCN(t *testing.T) {
	g, ok := newIngressEnv(t)
	if !ok {
		return
	}
	httpsPort := haproxytest.FreePort(t)
	g.web("web", 0)
	hosts := []string{"cn.example.com", "opt.example.com"}
	m := g.mTLS(hosts...)
	pair := func(cn string) *tls.Certificate {
		c := testcert.Issue(t, testcert.Spec{CN: cn, Client: true}, m.clientCA)
		p, err := tls.X509KeyPair(c.PEM(), c.KeyPEM(t))
		if err != nil {
			t.Fatal(err)
		}
		return &p
	}
	alice, bob, alicex := pair("alice"), pair("bob"), pair("alicex")
	n := ingress.NginxPrefix
	withTLS := func(i *netv1.Ingress) *netv1.Ingress {
		i.Spec.TLS = []netv1.IngressTLS{{Hosts: []string{i.Spec.Rules[0].Host}, SecretName: "server"}}
		return i
	}
	cnOf := func(re string) map[string]string {
		return map[string]string{n + "auth-tls-secret": "clients-ca", n + "auth-tls-match-cn": re}
	}
	opt := cnOf("CN=alice")
	opt[n+"auth-tls-verify-client"] = "optional"
	optNone := map[string]string{n + "auth-tls-secret": "clients-ca", n + "auth-tls-verify-client": "optional"}
	g.create(
		withTLS(ingressOf("cn", hosts[0], map[string]string{n + "auth-tls-secret": "clients-ca"}, prefix("/", "web"))),
		withTLS(ingressOf("opt", hosts[1], optNone, prefix("/", "web"))),
	)
	g.start(fmt.Sprintf("--ingress-https-port=%d", httpsPort))
	answers := func(host string, client *tls.Certificate, want int) func() error {
		return func() error {
			code, _, err := mtlsGet(httpsPort, host, m.server, client)
			if err != nil || code != want {
				return fmt.Errorf("%s: %d, %v; want %d", host, code, err, want)
			}
			return nil
		}
	}
	g.eventually("no expression: any client of the CA served", answers(hosts[0], bob, http.StatusOK))
	first := g.reloads()
	updateIngress(t, g.ing.Ingresses(ns), "cn", func(mod *netv1.Ingress) { mod.Annotations = cnOf("CN=alice") })
	g.eventually("the frontend's first expression", answers(hosts[0], bob, http.StatusForbidden))
	second := g.reloads()
	if second != first {
		t.Errorf("the frontend's first auth-tls-match-cn: %d reloads, want 0 (its rules are always there)", second-first)
	}
	updateIngress(t, g.ing.Ingresses(ns), "opt", func(mod *netv1.Ingress) { mod.Annotations = opt })
	g.eventually("a second expression", answers(hosts[1], nil, http.StatusForbidden))
	if r := g.reloads(); r != second {
		t.Errorf("a second auth-tls-match-cn in the frontend: %d reloads, want 0", r-second)
	}
	checkAll(t,
		answers(hosts[0], alice, http.StatusOK),
		answers(hosts[0], bob, http.StatusForbidden),
		answers(hosts[0], alicex, http.StatusOK), // searched for, as nginx's ~: CN=alicex holds CN=alice
		answers(hosts[1], nil, http.StatusForbidden),
		answers(hosts[1], alice, http.StatusOK),
		answers(hosts[1], bob, http.StatusForbidden),
	)
	before := g.reloads()
	updateIngress(t, g.ing.Ingresses(ns), "cn", func(mod *netv1.Ingress) { mod.Annotations = cnOf("^CN=alice$") })
	g.eventually("anchored", answers(hosts[0], alicex, http.StatusForbidden))
	checkAll(t, answers(hosts[0], alice, http.StatusOK))
	updateIngress(t, g.ing.Ingresses(ns), "cn", func(mod *netv1.Ingress) { mod.Annotations = cnOf("^CN=(alice|bob)$") })
	g.eventually("an alternation", answers(hosts[0], bob, http.StatusOK))
	checkAll(t, answers(hosts[0], alice, http.StatusOK), answers(hosts[0], alicex, http.StatusForbidden))
	updateIngress(t, g.ing.Ingresses(ns), "cn", func(mod *netv1.Ingress) { mod.Annotations = cnOf("^CN=(a+)+$") })
	g.eventually("an Event refuses the expression", g.ingressEvent("cn", "Refused", "exponential time"))
	checkAll(t, answers(hosts[0], bob, http.StatusOK), answers(hosts[0], alicex, http.StatusForbidden))
	updateIngress(t, g.ing.Ingresses(ns), "opt", func(mod *netv1.Ingress) { mod.Annotations = optNone })
	g.eventually("match-cn removed", answers(hosts[1], bob, http.StatusOK))
	checkAll(t, answers(hosts[1], nil, http.StatusOK))
	if r := g.reloads(); r != before {
		t.Errorf("auth-tls-match-cn changed and removed reloaded HAProxy %d times, want 0", r-before)
	}
}
