package e2e

import (
	"fmt"
	"net"
	"net/http"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/haproxy-k8s-sync/haproxy-k8s-sync/internal/ingress"
	"github.com/haproxy-k8s-sync/haproxy-k8s-sync/internal/testing/lab"
)

// failingPod is an HTTP server at ip:port answering every request 502
// with the body "NAME".
func failingPod(t *testing.T, name, ip string, port int) {
	t.Helper()
	servePod(t, ip, port, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.WriteHeader(http.StatusBadGateway)
		fmt.Fprint(w, name)
	}))
}

// servePod serves h at ip:port (an address of the test's own network
// namespace) until the test ends.
func servePod(t *testing.T, ip string, port int, h http.Handler) {
	t.Helper()
	l, err := net.Listen("tcp", net.JoinHostPort(ip, fmt.Sprint(port)))
	if err != nil {
		t.Fatal(err)
	}
	srv := &http.Server{ReadHeaderTimeout: 5 * time.Second, Handler: h}
	go func() { _ = srv.Serve(l) }()
	t.Cleanup(func() { _ = srv.Close() })
}

// podsService is Service name (port 80) whose endpoints are ips at port.
func (g *ingressEnv) podsService(name string, port int32, ips ...string) {
	g.t.Helper()
	g.podsServiceIn(ns, name, port, ips...)
}

// podsServiceIn is podsService in namespace sns (created when missing).
func (g *ingressEnv) podsServiceIn(sns, name string, port int32, ips ...string) {
	g.t.Helper()
	g.podsServiceAt(sns, name, 80, port, ips...)
}

// podsServiceAt is podsServiceIn with the Service's port svcPort.
func (g *ingressEnv) podsServiceAt(sns, name string, svcPort, port int32, ips ...string) {
	g.t.Helper()
	if _, err := g.client.CoreV1().Namespaces().Create(bg, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: sns}}, metav1.CreateOptions{}); err != nil && !apierrors.IsAlreadyExists(err) {
		g.t.Fatal(err)
	}
	if _, err := g.client.CoreV1().Services(sns).Create(bg, &corev1.Service{ObjectMeta: metav1.ObjectMeta{Name: name},
		Spec: corev1.ServiceSpec{Ports: []corev1.ServicePort{{Name: "tcp", Port: svcPort, Protocol: corev1.ProtocolTCP}}}}, metav1.CreateOptions{}); err != nil {
		g.t.Fatal(err)
	}
	var eps []lab.Endpoint
	for _, ip := range ips {
		eps = append(eps, lab.Endpoint{IP: ip, Node: "n1", Ready: true})
	}
	if err := lab.ApplySlice(bg, g.client, lab.SliceFor(sns, name, port, eps)); err != nil {
		g.t.Fatal(err)
	}
}

// statuses sends n requests of method to host on serviceIP():port and
// counts the answers by status.
func statuses(port int, method, host string, n int) (map[int]int, error) {
	c := &http.Client{Transport: &http.Transport{DisableKeepAlives: true}, Timeout: 3 * time.Second}
	seen := map[int]int{}
	for range n {
		code, err := statusOf(c, method, fmt.Sprintf("http://%s:%d/", serviceIP(), port), host, strings.NewReader("x"))
		if err != nil {
			return seen, err
		}
		seen[code]++
	}
	return seen, nil
}

// TestIngressRetryAndCanary: ingress-nginx's proxy-next-upstream and
// proxy-next-upstream-tries, canary-by-cookie and
// canary-by-header-pattern on real HAProxy and real servers, with the
// behaviour ingress-nginx documents:
//   - a Service of two Pods, one answering 502: with proxy-next-upstream
//     "error timeout http_502" every GET is answered 200 by the good Pod
//     (HAProxy retries on the other one), while an Ingress without the key
//     to the same Service lets 502s through; a POST is not retried on a
//     502 (no non_idempotent), as nginx does not pass a non-idempotent
//     request on once sent;
//   - a canary by cookie: beta_user=always reaches the canary, never and
//     no cookie the main Service;
//   - a canary by header pattern ^(eu-west|eu-central)$: both values reach
//     the canary, another value (or one the pattern would match only
//     unanchored) the main Service;
//   - upstream-hash-by $request_uri on a Service of two Pods: a URI always
//     reaches the same Pod, and different URIs both Pods.
func TestIngressRetryAndCanary(t *testing.T) {
	g, ok := newIngressEnv(t)
	if !ok {
		return
	}
	g.web("web", 0)
	g.web("canary", 1)
	failingPod(t, "bad", podAddrs[2], 8081)
	httpPod(t, "good", podAddrs[0], 8081)
	g.podsService("flaky", 8081, podAddrs[2], podAddrs[0])
	g.podsService("pair", 8080, podAddrs[0], podAddrs[1])
	n := ingress.NginxPrefix
	g.create(
		ingressOf("retry", "retry.example.com", map[string]string{n + "proxy-next-upstream": "error timeout http_502", n + "proxy-next-upstream-tries": "3"},
			prefix("/", "flaky")),
		ingressOf("plain", "plain.example.com", nil, prefix("/", "flaky")),
		ingressOf("beta", "beta.example.com", nil, prefix("/", "web")),
		ingressOf("beta-canary", "beta.example.com", map[string]string{n + "canary": "true", n + "canary-by-cookie": "beta_user"}, prefix("/", "canary")),
		ingressOf("region", "region.example.com", nil, prefix("/", "web")),
		ingressOf("region-canary", "region.example.com", map[string]string{n + "canary": "true", n + "canary-by-header": "X-Region",
			n + "canary-by-header-pattern": "^(eu-west|eu-central)$"}, prefix("/", "canary")),
		ingressOf("hash", "hash.example.com", map[string]string{n + "upstream-hash-by": "$request_uri"}, prefix("/", "pair")),
	)
	g.start()

	t.Run("proxy-next-upstream", func(t *testing.T) {
		// Both Pods serve once the plain Ingress answers 502 and 200.
		eventuallyIn(t, "the plain Ingress reaches both Pods", func() error {
			seen, err := statuses(g.httpPort, http.MethodGet, "plain.example.com", 8)
			if err != nil {
				return err
			}
			if seen[http.StatusOK] == 0 || seen[http.StatusBadGateway] == 0 {
				return fmt.Errorf("plain.example.com answered %v, want 200s and 502s (the bad Pod's)", seen)
			}
			return nil
		})
		eventuallyIn(t, "the retrying Ingress serves", answers(g.httpPort, false, "retry.example.com", "/", 200, "good "))
		seen, err := statuses(g.httpPort, http.MethodGet, "retry.example.com", 20)
		if err != nil || seen[http.StatusOK] != 20 {
			t.Errorf("GET retry.example.com x20: %v (%v), want 20 answers 200: a 502 is passed on to the other Pod", seen, err)
		}
		seen, err = statuses(g.httpPort, http.MethodPost, "retry.example.com", 10)
		if err != nil || seen[http.StatusBadGateway] == 0 || seen[http.StatusOK] == 0 {
			t.Errorf("POST retry.example.com x10: %v (%v), want 502s and 200s: a POST is not retried once sent (no non_idempotent)", seen, err)
		}
	})

	t.Run("canary-by-cookie", func(t *testing.T) {
		eventuallyIn(t, "beta_user=always reaches the canary", answers(g.httpPort, false, "beta.example.com", "/", 200, "canary ", "Cookie: a=1; beta_user=always"))
		for _, c := range []struct{ cookie, want string }{
			{"beta_user=always", "canary "}, {"beta_user=never", "web "}, {"beta_user=maybe", "web "}, {"other=always", "web "}, {"", "web "},
		} {
			var hs []string
			if c.cookie != "" {
				hs = append(hs, "Cookie: "+c.cookie)
			}
			for range 3 {
				if err := answers(g.httpPort, false, "beta.example.com", "/", 200, c.want, hs...)(); err != nil {
					t.Errorf("cookie %q: %v", c.cookie, err)
					break
				}
			}
		}
	})

	t.Run("canary-by-header-pattern", func(t *testing.T) {
		eventuallyIn(t, "X-Region: eu-west reaches the canary", answers(g.httpPort, false, "region.example.com", "/", 200, "canary ", "X-Region: eu-west"))
		for _, c := range []struct{ region, want string }{
			{"eu-west", "canary "}, {"eu-central", "canary "}, {"us-east", "web "}, {"eu-west-1", "web "}, {"", "web "},
		} {
			var hs []string
			if c.region != "" {
				hs = append(hs, "X-Region: "+c.region)
			}
			if err := answers(g.httpPort, false, "region.example.com", "/", 200, c.want, hs...)(); err != nil {
				t.Errorf("X-Region %q: %v", c.region, err)
			}
		}
	})

	t.Run("upstream-hash-by", func(t *testing.T) {
		pods := func(path string, n int) (map[string]int, error) {
			seen := map[string]int{}
			for range n {
				code, body, err := get(g.httpPort, false, "hash.example.com", path)
				if err != nil || code != http.StatusOK {
					return seen, fmt.Errorf("GET hash.example.com%s: %d %q %v", path, code, body, err)
				}
				pod, _, _ := strings.Cut(body, " ")
				seen[pod]++
			}
			return seen, nil
		}
		eventuallyIn(t, "the hashing Ingress serves", answers(g.httpPort, false, "hash.example.com", "/", 200, ""))
		all := map[string]bool{}
		for i := range 12 {
			path := fmt.Sprintf("/item/%d?page=%d", i, i)
			seen, err := pods(path, 4)
			if err != nil {
				t.Fatal(err)
			}
			if len(seen) != 1 {
				t.Errorf("GET %s x4 reached %v, want one Pod", path, seen)
			}
			for p := range seen {
				all[p] = true
			}
		}
		if !all["web"] || !all["canary"] {
			t.Errorf("12 URIs reached %v, want both Pods", all)
		}
	})
}
