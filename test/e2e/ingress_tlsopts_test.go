package e2e

import (
	"crypto/tls"
	"fmt"
	"net"
	"net/http"
	"slices"
	"sync"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	netv1 "k8s.io/api/networking/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/haproxy-k8s-sync/haproxy-k8s-sync/internal/ingress"
	"github.com/haproxy-k8s-sync/haproxy-k8s-sync/internal/testing/lab"
	"github.com/haproxy-k8s-sync/haproxy-k8s-sync/internal/testing/testcert"
)

// versionPod is an HTTPS server at ip:port offering TLS versions lo to
// hi, answering "vers=VERSION suite=SUITE": what the client (HAProxy)
// negotiated.
func versionPod(t *testing.T, ip string, port int, lo, hi uint16) {
	t.Helper()
	cert := testcert.Issue(t, testcert.Spec{CN: "web.internal", DNS: []string{"web.internal"}}, testcert.CA(t, "pod CA"))
	pair, err := tls.X509KeyPair(cert.PEM(), cert.KeyPEM(t))
	if err != nil {
		t.Fatal(err)
	}
	l, err := tls.Listen("tcp", net.JoinHostPort(ip, fmt.Sprint(port)), &tls.Config{Certificates: []tls.Certificate{pair},
		MinVersion: lo, MaxVersion: hi})
	if err != nil {
		t.Fatal(err)
	}
	srv := &http.Server{ReadHeaderTimeout: 5 * time.Second, Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		fmt.Fprintf(w, "vers=%s suite=%s", tls.VersionName(r.TLS.Version), tls.CipherSuiteName(r.TLS.CipherSuite))
	})}
	go func() { _ = srv.Serve(l) }()
	t.Cleanup(func() { _ = srv.Close() })
}

// TestIngressTLSVersionsAndBalance: on real HAProxy, the TLS versions
// and ciphers offered to a Pod speaking TLS (ingress-nginx's
// proxy-ssl-protocols and proxy-ssl-ciphers, HAProxy Ingress's
// ssl-ciphers-backend and ssl-cipher-suites-backend: the Pod reports
// what was negotiated, which the Pod's own preference would make
// otherwise), a version the Pod does not speak answered 503; a
// malformed list refused with an Event and the last good version kept;
// and load-balance: ewma (HAProxy Ingress's balance-algorithm:
// leastconn) sending concurrent requests away from a slow Pod, where
// round robin gives it half; service-upstream sending to the Service's
// cluster IP (a listener of the test's standing in for kube-proxy), not
// to its Pod.
func TestIngressTLSVersionsAndBalance(t *testing.T) {
	const clusterIP = "10.0.5.7" // in the test apiserver's Service range
	if !inNetns(t, append(slices.Clone(podAddrs), clusterIP)...) {
		return
	}
	g, _ := newIngressEnv(t)
	servePod(t, podAddrs[2], 8095, http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) { fmt.Fprint(w, "pod") }))
	servePod(t, clusterIP, 80, http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) { fmt.Fprint(w, "cluster-ip") }))
	if _, err := g.client.CoreV1().Services(ns).Create(bg, &corev1.Service{ObjectMeta: metav1.ObjectMeta{Name: "upstream"},
		Spec: corev1.ServiceSpec{ClusterIP: clusterIP, Ports: []corev1.ServicePort{{Name: "tcp", Port: 80, Protocol: corev1.ProtocolTCP}}}},
		metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	if err := lab.ApplySlice(bg, g.client, lab.SliceFor(ns, "upstream", 8095, []lab.Endpoint{{IP: podAddrs[2], Node: "n1", Ready: true}})); err != nil {
		t.Fatal(err)
	}
	versionPod(t, podAddrs[0], 8443, tls.VersionTLS12, tls.VersionTLS13)
	g.serviceOf("both", podAddrs[0], 8443)
	versionPod(t, podAddrs[1], 8443, tls.VersionTLS12, tls.VersionTLS12)
	g.serviceOf("tls12", podAddrs[1], 8443)
	// Two Pods of one Service: one answers at once, the other after
	// slowFor.
	const slowFor = 300 * time.Millisecond
	servePod(t, podAddrs[0], 8090, http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) { fmt.Fprint(w, "fast") }))
	servePod(t, podAddrs[1], 8090, http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		time.Sleep(slowFor) // the slow Pod's latency, not synchronisation
		fmt.Fprint(w, "slow")
	}))
	g.podsService("pair", 8090, podAddrs[0], podAddrs[1])
	n, hp := ingress.NginxPrefix, ingress.HAProxyPrefix
	https := func(more ...string) map[string]string {
		a := map[string]string{n + "backend-protocol": "HTTPS"}
		for i := 0; i+1 < len(more); i += 2 {
			a[more[i]] = more[i+1]
		}
		return a
	}
	g.create(
		ingressOf("plain", "plain.example.com", https(), prefix("/", "both")),
		ingressOf("v12", "v12.example.com", https(n+"proxy-ssl-protocols", "TLSv1.2"), prefix("/", "both")),
		ingressOf("v13", "v13.example.com", https(n+"proxy-ssl-protocols", "TLSv1.3"), prefix("/", "tls12")),
		ingressOf("aes256", "aes256.example.com", https(n+"proxy-ssl-protocols", "TLSv1.1 TLSv1.2",
			n+"proxy-ssl-ciphers", "ECDHE-ECDSA-AES256-GCM-SHA384"), prefix("/", "both")),
		ingressOf("hi-aes256", "hi-aes256.example.com", map[string]string{hp + "secure-backends": "true",
			hp + "ssl-ciphers-backend": "ECDHE-ECDSA-AES256-GCM-SHA384"}, prefix("/", "tls12")),
		ingressOf("hi-chacha", "hi-chacha.example.com", map[string]string{hp + "secure-backends": "true",
			hp + "ssl-cipher-suites-backend": "TLS_CHACHA20_POLY1305_SHA256"}, prefix("/", "both")),
		ingressOf("rr", "rr.example.com", nil, prefix("/", "pair")),
		ingressOf("ewma", "ewma.example.com", map[string]string{n + "load-balance": "ewma"}, prefix("/", "pair")),
		ingressOf("leastconn", "leastconn.example.com", map[string]string{hp + "balance-algorithm": "leastconn"}, prefix("/", "pair")),
		ingressOf("pods", "pods.example.com", nil, prefix("/", "upstream")),
		ingressOf("upstream", "upstream.example.com", map[string]string{n + "service-upstream": "true"}, prefix("/", "upstream")),
	)
	g.start()
	for _, c := range []struct {
		host   string
		status int
		body   string
	}{
		// Without the keys: TLS 1.3, the suite Go's preference (AES-128
		// first where the CPU has AES instructions, as here).
		{"plain.example.com", 200, "vers=TLS 1.3 suite="},
		{"v12.example.com", 200, "vers=TLS 1.2 suite="},
		{"v13.example.com", 503, ""}, // the Pod speaks TLS 1.2 only
		{"aes256.example.com", 200, "vers=TLS 1.2 suite=TLS_ECDHE_ECDSA_WITH_AES_256_GCM_SHA384"},
		{"hi-aes256.example.com", 200, "vers=TLS 1.2 suite=TLS_ECDHE_ECDSA_WITH_AES_256_GCM_SHA384"},
		{"hi-chacha.example.com", 200, "vers=TLS 1.3 suite=TLS_CHACHA20_POLY1305_SHA256"},
		{"pods.example.com", 200, "pod"},
		{"upstream.example.com", 200, "cluster-ip"},
	} {
		g.eventually("GET "+c.host, answers(g.httpPort, false, c.host, "/", c.status, c.body))
	}
	// A list OpenSSL would refuse: the Ingress refused with an Event, its
	// last good version (AES-256) kept.
	updateIngress(t, g.ing.Ingresses(ns), "aes256", func(i *netv1.Ingress) {
		i.Annotations[n+"proxy-ssl-ciphers"] = "NO-SUCH-CIPHER"
	})
	g.eventually("a cipher list refused: an Event", g.ingressEvent("aes256", "Refused", "NO-SUCH-CIPHER"))
	g.eventually("the last good version kept", answers(g.httpPort, false, "aes256.example.com", "/", 200, "vers=TLS 1.2 suite=TLS_ECDHE_ECDSA_WITH_AES_256_GCM_SHA384"))

	// Balance: 8 clients at once, 10 requests each; the slow Pod's share.
	// The first requests find no connection anywhere and split evenly
	// (4 of the 80 to the slow Pod), ties after them may go either way:
	// with 5 requests each a loaded CI machine saw 28%.
	slowShare := func(host string) (float64, error) {
		var mu sync.Mutex
		counts := map[string]int{}
		var wg sync.WaitGroup
		var first error
		for range 8 {
			wg.Go(func() {
				for range 10 {
					code, body, err := get(g.httpPort, false, host, "/")
					mu.Lock()
					if err == nil && code != 200 {
						err = fmt.Errorf("%s: %d %q", host, code, body)
					}
					if err != nil && first == nil {
						first = err
					}
					counts[body]++
					mu.Unlock()
				}
			})
		}
		wg.Wait()
		if first != nil {
			return 0, first
		}
		return float64(counts["slow"]) / float64(counts["slow"]+counts["fast"]), nil
	}
	for _, host := range []string{"rr.example.com", "ewma.example.com", "leastconn.example.com"} {
		g.eventually("GET "+host, answers(g.httpPort, false, host, "/", 200, ""))
	}
	rr, err := slowShare("rr.example.com")
	if err != nil {
		t.Fatal(err)
	}
	if rr < 0.4 {
		t.Errorf("round robin: the slow Pod took %.0f%% of the requests, want about half", 100*rr)
	}
	for _, host := range []string{"ewma.example.com", "leastconn.example.com"} {
		s, err := slowShare(host)
		if err != nil {
			t.Fatal(err)
		}
		if s > 0.25 {
			t.Errorf("%s: the slow Pod took %.0f%% of concurrent requests (round robin: %.0f%%), want at most 25%%", host, 100*s, 100*rr)
		}
	}
}
