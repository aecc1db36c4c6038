package e2e

import (
	"crypto/tls"
	"fmt"
	"net"
	"net/http"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/haproxy-k8s-sync/haproxy-k8s-sync/internal/ingress"
	"github.com/haproxy-k8s-sync/haproxy-k8s-sync/internal/testing/testcert"
)

// tlsPod is an HTTPS server at ip:port with cert, answering
// "NAME sni=SNI client=CN proto=PROTO": the server name the client sent,
// the common name of the client certificate it presented ("" for none)
// and the HTTP version (HTTP/2 when ALPN chose h2).
func tlsPod(t *testing.T, name, ip string, port int, cert testcert.Cert) {
	t.Helper()
	pair, err := tls.X509KeyPair(cert.PEM(), cert.KeyPEM(t))
	if err != nil {
		t.Fatal(err)
	}
	l, err := tls.Listen("tcp", net.JoinHostPort(ip, fmt.Sprint(port)), &tls.Config{Certificates: []tls.Certificate{pair},
		ClientAuth: tls.RequestClientCert, MinVersion: tls.VersionTLS12, NextProtos: []string{"h2", "http/1.1"}})
	if err != nil {
		t.Fatal(err)
	}
	srv := &http.Server{ReadHeaderTimeout: 5 * time.Second, Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		client := ""
		if len(r.TLS.PeerCertificates) > 0 {
			client = r.TLS.PeerCertificates[0].Subject.CommonName
		}
		fmt.Fprintf(w, "%s sni=%s client=%s proto=%s", name, r.TLS.ServerName, client, r.Proto)
	})}
	go func() { _ = srv.Serve(l) }()
	t.Cleanup(func() { _ = srv.Close() })
}

// serveTLSPod serves h over TLS with cert at ip:port (an address of the
// test's own network namespace) until the test ends.
func serveTLSPod(t *testing.T, ip string, port int, cert testcert.Cert, h http.Handler) {
	t.Helper()
	pair, err := tls.X509KeyPair(cert.PEM(), cert.KeyPEM(t))
	if err != nil {
		t.Fatal(err)
	}
	l, err := tls.Listen("tcp", net.JoinHostPort(ip, fmt.Sprint(port)), &tls.Config{Certificates: []tls.Certificate{pair}, MinVersion: tls.VersionTLS12})
	if err != nil {
		t.Fatal(err)
	}
	srv := &http.Server{ReadHeaderTimeout: 5 * time.Second, Handler: h}
	go func() { _ = srv.Serve(l) }()
	t.Cleanup(func() { _ = srv.Close() })
}

// TestIngressBackendTLS: backend TLS annotations on real HAProxy to a
// Pod speaking TLS with a certificate for web.internal from a test CA:
// ingress-nginx's backend-protocol HTTPS unverified (its default), and
// with proxy-ssl-verify on against proxy-ssl-secret's ca.crt,
// proxy-ssl-name checked and sent (proxy-ssl-server-name), the Secret's
// pair presented as client certificate; HAProxy Ingress's secure-backends
// verified against secure-verify-ca-secret with secure-verify-hostname
// (no SNI), h1-ssl with secure-sni, GRPCS (HTTP/2 over TLS); verification against another CA or
// another name answers 503, the Pod in clear without an annotation does
// not answer 200. The other CA's Secret given the Pod's CA: served, with
// no reload. The CA Secret deleted: an InvalidBackendTLS Event and 503,
// never unverified.
func TestIngressBackendTLS(t *testing.T) {
	g, ok := newIngressEnv(t)
	if !ok {
		return
	}
	// HAProxy's runtime socket went away once under load (2026-11-30):
	// what HAProxy said, for the next time.
	t.Cleanup(func() {
		if t.Failed() {
			t.Logf("HAProxy:\n%s", g.hap.Output())
		}
	})
	ca, other := testcert.CA(t, "backend CA"), testcert.CA(t, "other CA")
	tlsPod(t, "secure", podAddrs[0], 8443, testcert.Issue(t, testcert.Spec{CN: "web.internal", DNS: []string{"web.internal"}}, ca))
	g.serviceOf("secure", podAddrs[0], 8443)
	client := testcert.Issue(t, testcert.Spec{CN: "haproxy-client", Client: true}, other)
	secrets := g.client.CoreV1().Secrets(ns)
	for _, s := range []*corev1.Secret{
		{ObjectMeta: metav1.ObjectMeta{Name: "backend-ca", Namespace: ns}, Type: corev1.SecretTypeOpaque,
			Data: map[string][]byte{ingress.CAKey: ca.PEM()}},
		{ObjectMeta: metav1.ObjectMeta{Name: "other-ca", Namespace: ns}, Type: corev1.SecretTypeOpaque,
			Data: map[string][]byte{ingress.CAKey: other.PEM()}},
		{ObjectMeta: metav1.ObjectMeta{Name: "ca-and-client", Namespace: ns}, Type: corev1.SecretTypeTLS,
			Data: map[string][]byte{ingress.CAKey: ca.PEM(), corev1.TLSCertKey: client.PEM(), corev1.TLSPrivateKeyKey: client.KeyPEM(t)}},
	} {
		if _, err := secrets.Create(bg, s, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	n, hp := ingress.NginxPrefix, ingress.HAProxyPrefix
	g.create(
		ingressOf("clear", "clear.example.com", nil, prefix("/", "secure")),
		ingressOf("noverify", "noverify.example.com", map[string]string{n + "backend-protocol": "HTTPS"}, prefix("/", "secure")),
		ingressOf("verify", "verify.example.com", map[string]string{n + "backend-protocol": "HTTPS", n + "proxy-ssl-verify": "on",
			n + "proxy-ssl-secret": ns + "/ca-and-client", n + "proxy-ssl-name": "web.internal", n + "proxy-ssl-server-name": "on"}, prefix("/", "secure")),
		ingressOf("wrong-name", "wrong-name.example.com", map[string]string{n + "backend-protocol": "HTTPS", n + "proxy-ssl-verify": "on",
			n + "proxy-ssl-secret": "backend-ca", n + "proxy-ssl-name": "api.internal"}, prefix("/", "secure")),
		ingressOf("secure", "secure.example.com", map[string]string{hp + "secure-backends": "true",
			hp + "secure-verify-ca-secret": "backend-ca", hp + "secure-verify-hostname": "web.internal"}, prefix("/", "secure")),
		ingressOf("sni", "sni.example.com", map[string]string{hp + "backend-protocol": "h1-ssl", hp + "secure-sni": "web.internal"}, prefix("/", "secure")),
		ingressOf("grpcs", "grpcs.example.com", map[string]string{n + "backend-protocol": "GRPCS"}, prefix("/", "secure")),
		ingressOf("wrong-ca", "wrong-ca.example.com", map[string]string{hp + "secure-backends": "true",
			hp + "secure-verify-ca-secret": "other-ca"}, prefix("/", "secure")),
	)
	g.start()
	g.eventually("the unverified backend serves", answers(g.httpPort, false, "noverify.example.com", "/", 200, "secure sni= client="))
	for _, c := range []struct {
		host   string
		status int
		body   string
	}{
		{"verify.example.com", 200, "secure sni=web.internal client=haproxy-client"},
		{"secure.example.com", 200, "secure sni= client="},
		{"sni.example.com", 200, "secure sni=web.internal client= proto=HTTP/1.1"},
		{"grpcs.example.com", 200, "secure sni= client= proto=HTTP/2.0"}, // HTTP/2 over TLS, ALPN h2
		{"wrong-name.example.com", 503, ""},
		{"wrong-ca.example.com", 503, ""},
		{"clear.example.com", 400, ""}, // Go's answer to HTTP on its TLS port
	} {
		// Each backend is checked for its own status within the
		// deadline: a 503 must not be a backend not served yet.
		g.eventually("GET "+c.host, answers(g.httpPort, false, c.host, "/", c.status, c.body))
	}
	// Held a while: no request on the wrong CA or name ever reaches it.
	for range 5 {
		if err := answers(g.httpPort, false, "wrong-ca.example.com", "/", 503, "")(); err != nil {
			t.Error(err)
		}
	}
	// The client certificate rotated in ca-and-client: its file keeps its
	// name (named for the Secret) and the new one is committed through
	// the Runtime API (runtimeapi/clientcerts.go): the Pod sees the new
	// subject, with no reload and no request failing meanwhile. Before
	// any CA commit: a worker that took one reloads for a certificate
	// instead (haproxy/haproxy#3165, clientcerts.go).
	reloads := g.reloads()
	rotated := testcert.Issue(t, testcert.Spec{CN: "haproxy-client-2", Client: true}, other)
	cc, err := secrets.Get(bg, "ca-and-client", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	cc.Data[corev1.TLSCertKey], cc.Data[corev1.TLSPrivateKeyKey] = rotated.PEM(), rotated.KeyPEM(t)
	if _, err := secrets.Update(bg, cc, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	if n, failed, last := untilAnswered(g.httpPort, "verify.example.com", "secure sni=web.internal client=haproxy-client-2", 30*time.Second); failed > 0 || n == 0 {
		t.Errorf("client certificate rotated: %d of %d requests failed or never the new subject, the last: %s", failed, n, last)
	}
	if n := g.reloads() - reloads; n != 0 {
		t.Errorf("%d reloads for a client certificate rotated in a Secret, want 0", n)
	}
	// The Pod's CA put into other-ca: the bundle is committed and the
	// backend's servers created again at runtime (runtimeapi/renew.go),
	// no reload.
	reloads = g.reloads()
	otherCA, err := secrets.Get(bg, "other-ca", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	otherCA.Data[ingress.CAKey] = ca.PEM()
	if _, err := secrets.Update(bg, otherCA, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	g.eventually("other-ca holds the Pod's CA: served", answers(g.httpPort, false, "wrong-ca.example.com", "/", 200, "secure sni= client="))
	if n := g.reloads() - reloads; n != 0 {
		t.Errorf("%d reloads for a CA rotated in a Secret, want 0", n)
	}
	if err := secrets.Delete(bg, "ca-and-client", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	g.eventually("the CA Secret deleted: an Event", g.ingressEvent("verify", "InvalidBackendTLS", "ca-and-client"))
	g.eventually("the CA Secret deleted: 503, never unverified", answers(g.httpPort, false, "verify.example.com", "/", 503, ""))
	g.eventually("the others still served", answers(g.httpPort, false, "secure.example.com", "/", 200, "secure sni= client="))
}

// untilAnswered sends requests for host one after another until one is
// answered 200 with a body starting with want, for at most within: n is
// how many were sent (0: want never seen) and failed how many were not
// answered 200, the last failure in last.
func untilAnswered(port int, host, want string, within time.Duration) (n, failed int, last string) {
	for end := time.Now().Add(within); time.Now().Before(end); {
		code, body, err := get(port, false, host, "/")
		n++
		switch {
		case err != nil:
			failed, last = failed+1, err.Error()
		case code != http.StatusOK:
			failed, last = failed+1, fmt.Sprintf("%d %q", code, body)
		case strings.HasPrefix(body, want):
			return n, failed, last
		default:
			last = body
		}
	}
	return 0, failed, "never " + want + "; last " + last
}
