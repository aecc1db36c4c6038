package e2e

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"fmt"
	"net"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	gwv1 "sigs.k8s.io/gateway-api/apis/v1"

	"github.com/haproxy-k8s-sync/haproxy-k8s-sync/internal/gateway"
	"github.com/haproxy-k8s-sync/haproxy-k8s-sync/internal/haproxy/haproxytest"
	"github.com/haproxy-k8s-sync/haproxy-k8s-sync/internal/testing/testcert"
)

// handshaker completes TLS handshakes with an HTTPS listener naming sni,
// verifying the certificate served against roots (a certificate of
// another name or issuer fails), and counts them.
type handshaker struct {
	addr, sni  string
	roots      *x509.CertPool
	ok, failed atomic.Int64
	firstErr   atomic.Pointer[error]
}

func newHandshaker(addr, sni string, root testcert.Cert) *handshaker {
	roots := x509.NewCertPool()
	roots.AddCert(root.Cert)
	return &handshaker{addr: addr, sni: sni, roots: roots}
}

// hello is one handshake on a new connection: the leaf served.
func (h *handshaker) hello() (*x509.Certificate, error) {
	d := &net.Dialer{Timeout: 5 * time.Second}
	c, err := tls.DialWithDialer(d, "tcp", h.addr, &tls.Config{ServerName: h.sni, RootCAs: h.roots, NextProtos: []string{"h2", "http/1.1"}})
	if err != nil {
		return nil, err
	}
	defer c.Close()
	return c.ConnectionState().PeerCertificates[0], nil
}

// load runs handshakes one after the other until stop is closed, pausing
// pause between them, counting the failures and keeping the first.
func (h *handshaker) load(stop <-chan struct{}, pause time.Duration) {
	for {
		select {
		case <-stop:
			return
		case <-time.After(pause): // the load's pace
		}
		if _, err := h.hello(); err != nil {
			h.failed.Add(1)
			h.firstErr.CompareAndSwap(nil, &err)
		} else {
			h.ok.Add(1)
		}
	}
}

// startLoad runs n load loops; the function returned stops them and
// waits for them.
func (h *handshaker) startLoad(n int, pause time.Duration) (stop func()) {
	done := make(chan struct{})
	var wg sync.WaitGroup
	for range n {
		wg.Go(func() { h.load(done, pause) })
	}
	return func() { close(done); wg.Wait() }
}

// until polls with new handshakes until one is served want, and returns
// how long after start that was; on timeout, what was served last.
func (h *handshaker) until(want *x509.Certificate, start time.Time, deadline time.Duration) (time.Duration, error) {
	var last string
	for time.Since(start) < deadline {
		leaf, err := h.hello()
		if err == nil && leaf.Equal(want) {
			return time.Since(start), nil
		}
		if err != nil {
			last = err.Error()
		} else {
			last = fmt.Sprintf("serial %v", leaf.SerialNumber)
		}
		time.Sleep(2 * time.Millisecond) // poll interval
	}
	return 0, fmt.Errorf("certificate serial %v not served for %s within %s; last: %s", want.SerialNumber, h.sni, deadline, last)
}

// rotationSecret is TLS Secret name (namespace ns) holding a new leaf for
// host issued by ca.
func rotationSecret(tb testing.TB, name, host string, ca testcert.Cert) (*corev1.Secret, *x509.Certificate) {
	c := testcert.Issue(tb, testcert.Spec{CN: host, DNS: []string{host}}, ca)
	return &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns}, Type: corev1.SecretTypeTLS,
		Data: map[string][]byte{corev1.TLSCertKey: c.PEM(), corev1.TLSPrivateKeyKey: c.KeyPEM(tb)}}, c.Cert
}

// rotate writes a new leaf for host into Secret name and returns it and
// when the write was sent.
func rotate(tb testing.TB, client kubernetes.Interface, name, host string, ca testcert.Cert) (*x509.Certificate, time.Time) {
	tb.Helper()
	s, leaf := rotationSecret(tb, name, host, ca)
	start := time.Now()
	if _, err := client.CoreV1().Secrets(ns).Update(context.Background(), s, metav1.UpdateOptions{}); err != nil {
		tb.Fatal(err)
	}
	return leaf, start
}

// httpsGateway is Gateway gw with one HTTPS listener on port terminating
// with Secret secret.
func httpsGateway(port int, secret string) *gwv1.Gateway {
	l := listener("https", gwv1.HTTPSProtocolType, port, "")
	l.TLS = &gwv1.ListenerTLSConfig{CertificateRefs: []gwv1.SecretObjectReference{{Name: gwv1.ObjectName(secret)}}}
	return &gwv1.Gateway{ObjectMeta: metav1.ObjectMeta{Name: "gw"}, Spec: gwv1.GatewaySpec{GatewayClassName: "hks", Listeners: []gwv1.Listener{l}}}
}

// TestGatewayCertificateRotation: an HTTPS listener's Secret rotated
// while clients complete handshakes one after the other: each new
// certificate is served (polled, with a deadline), no handshake fails
// (each verified against the issuing CA and the host name), and no
// rotation reloads HAProxy (new/set/commit ssl cert at runtime).
func TestGatewayCertificateRotation(t *testing.T) {
	if !inNetns(t, podAddrs...) {
		return
	}
	g := newHTTPGatewayEnv(t)
	g.httpPod("web-a", 1, 8080)
	port := haproxytest.FreePort(t)
	ca := testcert.CA(t, "rotation CA")
	s, leaf := rotationSecret(t, "cert", "a.example.com", ca)
	if _, err := g.client.CoreV1().Secrets(ns).Create(bg, s, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	if _, err := g.gw.GatewayV1().Gateways(ns).Create(bg, httpsGateway(port, "cert"), metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	g.httpRoute("a", "https", "a.example.com", backendRef("web-a", 1))
	g.startController("--mode=gateway")
	g.eventually("route accepted", g.routeAccepted(gateway.KindHTTPRoute, "a"))
	h := newHandshaker(fmt.Sprintf("%s:%d", serviceIP(), port), "a.example.com", ca)
	if _, err := h.until(leaf, time.Now(), converge); err != nil {
		t.Fatal(err)
	}
	reloads := g.reloads()

	stop := h.startLoad(2, 5*time.Millisecond)
	const rotations = 5
	for i := range rotations {
		next, start := rotate(t, g.client, "cert", "a.example.com", ca)
		d, err := h.until(next, start, converge)
		if err != nil {
			stop()
			t.Fatalf("rotation %d: %v", i, err)
		}
		t.Logf("rotation %d: the new certificate served %s after the Secret's update", i, d.Round(time.Millisecond))
	}
	stop()
	if n := h.failed.Load(); n > 0 {
		t.Fatalf("%d of %d handshakes failed during %d rotations; first: %v", n, n+h.ok.Load(), rotations, *h.firstErr.Load())
	}
	if h.ok.Load() == 0 {
		t.Fatal("no handshake completed during the rotations")
	}
	if n := g.reloads() - reloads; n != 0 {
		t.Fatalf("%d reloads for %d rotations, want 0", n, rotations)
	}
	t.Logf("%d handshakes during %d rotations, 0 failed, 0 reloads", h.ok.Load(), rotations)
}
