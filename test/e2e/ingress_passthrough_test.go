package e2e

import (
	"bytes"
	"context"
	"crypto/tls"
	"encoding/pem"
	"fmt"
	"io"
	"net"
	"net/http"
	"os/exec"
	"slices"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	netv1 "k8s.io/api/networking/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/haproxy-k8s-sync/haproxy-k8s-sync/internal/haproxy"
	"github.com/haproxy-k8s-sync/haproxy-k8s-sync/internal/haproxy/haproxytest"
	"github.com/haproxy-k8s-sync/haproxy-k8s-sync/internal/ingress"
	"github.com/haproxy-k8s-sync/haproxy-k8s-sync/internal/testing/testcert"
)

// tlsGet sends GET / to host over TLS (server name host) at
// serviceIP():port and returns the status, the body and the leaf
// certificate the server presented.
func tlsGet(port int, host string) (int, string, []byte, error) {
	addr := fmt.Sprintf("%s:%d", serviceIP(), port)
	dial := func(ctx context.Context, network, _ string) (net.Conn, error) {
		return (&net.Dialer{}).DialContext(ctx, network, addr)
	}
	tr := &http.Transport{DisableKeepAlives: true, DialContext: dial, ForceAttemptHTTP2: false,
		TLSClientConfig: &tls.Config{ServerName: host, InsecureSkipVerify: true}} //nolint:gosec // the test's own certificates
	c := &http.Client{Transport: tr, Timeout: 3 * time.Second}
	resp, err := c.Get("https://" + host + "/")
	if err != nil {
		return 0, "", nil, err
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(resp.Body)
	var leaf []byte
	if resp.TLS != nil && len(resp.TLS.PeerCertificates) > 0 {
		leaf = resp.TLS.PeerCertificates[0].Raw
	}
	return resp.StatusCode, string(body), leaf, nil
}

// TestIngressSSLPassthrough: ingress-nginx's ssl-passthrough on real
// HAProxy, beside a host HAProxy terminates on the same address and
// port: a client of the passthrough host sees the Pod's own certificate
// and the Pod sees the client's server name (HAProxy never terminated
// it); the terminated host still serves its certificate and its Pod.
// A passthrough Ingress added, moved to another host and deleted on a
// running controller: 0 reloads; one to a Service new to HAProxy: one,
// after which both hosts still serve.
func TestIngressSSLPassthrough(t *testing.T) {
	g, ok := newIngressEnv(t)
	if !ok {
		return
	}
	httpsPort := haproxytest.FreePort(t)
	pod := testcert.Issue(t, testcert.Spec{CN: "pod", DNS: []string{"pass.example.com", "pass2.example.com", "pass3.example.com"}}, testcert.Cert{})
	tlsPod(t, "tlspod", podAddrs[0], 8080, pod) // ingress_backendtls_test.go
	g.httpService("tlspod", podAddrs[0])
	g.web("web", 1)
	server := tlsSecret(t, "server", "term.example.com") // ingress_test.go
	if _, err := g.client.CoreV1().Secrets(ns).Create(bg, server, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	n := ingress.NginxPrefix
	term := ingressOf("term", "term.example.com", nil, prefix("/", "web"))
	term.Spec.TLS = []netv1.IngressTLS{{Hosts: []string{"term.example.com"}, SecretName: "server"}}
	g.create(term, ingressOf("pass", "pass.example.com", map[string]string{n + "ssl-passthrough": "true"}, prefix("/", "tlspod"), prefix("/other", "web")))
	g.start(fmt.Sprintf("--ingress-https-port=%d", httpsPort))

	passed := func(host string) func() error {
		return func() error {
			code, body, leaf, err := tlsGet(httpsPort, host)
			if err != nil || code != http.StatusOK || !bytes.HasPrefix([]byte(body), []byte("tlspod sni="+host+" ")) || !bytes.Equal(leaf, pod.Cert.Raw) {
				return fmt.Errorf("%s: %d %q, the Pod's certificate %v, %v; want the Pod's own answer and certificate", host, code, body, bytes.Equal(leaf, pod.Cert.Raw), err)
			}
			return nil
		}
	}
	notPassed := func(host string) func() error {
		return func() error {
			code, body, leaf, err := tlsGet(httpsPort, host)
			if err != nil || bytes.Equal(leaf, pod.Cert.Raw) || code != http.StatusNotFound {
				return fmt.Errorf("%s: %d %q, the Pod's certificate %v, %v; want HAProxy's handshake and 404", host, code, body, bytes.Equal(leaf, pod.Cert.Raw), err)
			}
			return nil
		}
	}
	block, _ := pem.Decode(server.Data[corev1.TLSCertKey])
	if block == nil {
		t.Fatal("the Secret's certificate is no PEM")
	}
	terminated := func() error {
		code, body, leaf, err := tlsGet(httpsPort, "term.example.com")
		if err != nil || code != http.StatusOK || !bytes.HasPrefix([]byte(body), []byte("web ")) || !bytes.Equal(leaf, block.Bytes) {
			return fmt.Errorf("term.example.com: %d %q, %v; want web behind the Secret's certificate", code, body, err)
		}
		return nil
	}
	g.eventually("the passthrough host reaches the Pod's TLS", passed("pass.example.com"))
	g.eventually("the terminated host on the same port", terminated)

	before := g.reloads()
	g.create(ingressOf("pass2", "pass2.example.com", map[string]string{n + "ssl-passthrough": "true"}, prefix("/", "tlspod")))
	g.eventually("a passthrough Ingress added", passed("pass2.example.com"))
	updateIngress(t, g.ing.Ingresses(ns), "pass2", func(mod *netv1.Ingress) { mod.Spec.Rules[0].Host = "pass3.example.com" })
	g.eventually("a passthrough Ingress moved to another host", passed("pass3.example.com"))
	checkAll(t, notPassed("pass2.example.com"), passed("pass.example.com"), terminated)
	if err := g.ing.Ingresses(ns).Delete(bg, "pass2", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	g.eventually("a passthrough Ingress deleted", notPassed("pass3.example.com"))
	checkAll(t, passed("pass.example.com"), terminated)
	if r := g.reloads(); r != before {
		t.Errorf("passthrough Ingresses added, moved and deleted reloaded HAProxy %d times, want 0", r-before)
	}

	// A Service new to HAProxy is a backend new to it: one reload (none
	// on 3.4+, which creates it at runtime, nor in tproxy mode, where it
	// takes a free spare of the pool), after which the terminating
	// frontend, behind its abstract socket, and the splitter still serve.
	want := 1
	if backendsAtRuntime(t) || tproxyMode() {
		want = 0
	}
	g.httpService("tlspod2", podAddrs[0])
	g.create(ingressOf("pass4", "pass2.example.com", map[string]string{n + "ssl-passthrough": "true"}, prefix("/", "tlspod2")))
	g.eventually("a passthrough Ingress to a new backend", passed("pass2.example.com"))
	checkAll(t, passed("pass.example.com"), terminated)
	if r := g.reloads(); r != before+want {
		t.Errorf("a passthrough Ingress to a new Service reloaded HAProxy %d times, want %d", r-before, want)
	}
}

// backendsAtRuntime reports whether the HAProxy the tests run creates
// backends at runtime (3.4+: runtimeapi/dynamic.go).
func backendsAtRuntime(t *testing.T) bool {
	t.Helper()
	return haproxyVersion(t).AtLeast(3, 4)
}

// haproxyVersion is the version of the tests' HAProxy (haproxy -v).
func haproxyVersion(t *testing.T) haproxy.Version {
	t.Helper()
	out, err := exec.Command(haproxytest.Bin(), "-v").Output()
	if err != nil {
		t.Fatal(err)
	}
	f := strings.Fields(string(out))
	i := slices.Index(f, "version")
	if i < 0 || i+1 >= len(f) {
		t.Fatalf("haproxy -v: %q", out)
	}
	v, err := haproxy.ParseVersion(f[i+1])
	if err != nil {
		t.Fatal(err)
	}
	return v
}
