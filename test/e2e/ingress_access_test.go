package e2e

import (
	"fmt"
	"io"
	"net"
	"net/http"
	"strings"
	"testing"
	"time"

	netv1 "k8s.io/api/networking/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/haproxy-k8s-sync/haproxy-k8s-sync/internal/ingress"
)

// getFrom sends GET / with Host host from address src to dst:port and
// returns the status.
func getFrom(src, dst string, port int, host string) (int, error) {
	d := &net.Dialer{Timeout: 3 * time.Second, LocalAddr: &net.TCPAddr{IP: net.ParseIP(src)}}
	tr := &http.Transport{DisableKeepAlives: true, DialContext: d.DialContext}
	return statusOf(&http.Client{Transport: tr, Timeout: 3 * time.Second}, http.MethodGet, "http://"+net.JoinHostPort(dst, fmt.Sprint(port))+"/", host, nil) // hostrequest_test.go
}

// servesFrom is nil once GET / on host from src to dst answers status.
func servesFrom(src, dst string, port int, host string, status int) func() error {
	return func() error {
		code, err := getFrom(src, dst, port, host)
		if err != nil {
			return fmt.Errorf("GET %s from %s to %s: %w", host, src, dst, err)
		}
		if code != status {
			return fmt.Errorf("GET %s from %s to %s: %d, want %d", host, src, dst, code, status)
		}
		return nil
	}
}

// TestIngressSourceRanges: ingress-nginx's allowlist-source-range (and
// its older name whitelist-source-range) and denylist-source-range, and
// HAProxy Ingress's denylist-source-range, on real HAProxy with clients
// of several source addresses (127.0.0.1, 127.0.0.2, ::1): a source
// outside the allow list or inside the deny list gets 403, the others
// the Pod; an IPv6 range never opens or closes a route to an IPv4
// client, nor an IPv4 range to an IPv6 one. Ingresses given, changed and
// relieved of ranges on a running controller: 0 reloads. A range that
// does not parse: an Event, the last good ranges keep applying.
func TestIngressSourceRanges(t *testing.T) {
	g, ok := newIngressEnv(t)
	if !ok {
		return
	}
	if l, err := net.Listen("tcp", "[::1]:0"); err != nil {
		t.Skipf("no IPv6 loopback in the network namespace: %v", err)
	} else {
		l.Close()
	}
	ing, httpPort, create := g.ing, g.httpPort, g.create
	g.web("web", 0)
	n, hp := ingress.NginxPrefix, ingress.HAProxyPrefix
	create(ingressOf("base", "base.example.com", nil, prefix("/", "web")))
	g.start("--bind-address", "::1")
	g.eventually("the base Ingress serves", servesFrom("127.0.0.2", serviceIP(), httpPort, "base.example.com", 200))
	before := g.reloads()

	create(ingressOf("allow4", "allow4.example.com", map[string]string{n + "allowlist-source-range": "192.0.2.0/24, 127.0.0.1"}, prefix("/", "web")))
	create(ingressOf("allow6", "allow6.example.com", map[string]string{n + "whitelist-source-range": "::/0"}, prefix("/", "web")))
	create(ingressOf("deny4", "deny4.example.com", map[string]string{n + "denylist-source-range": "127.0.0.2/32"}, prefix("/", "web")))
	create(ingressOf("deny6", "deny6.example.com", map[string]string{hp + "denylist-source-range": "::/0"}, prefix("/", "web")))
	create(ingressOf("both", "both.example.com", map[string]string{n + "allowlist-source-range": "127.0.0.0/8,::1", n + "denylist-source-range": "127.0.0.2"}, prefix("/", "web")))

	// IPv4 clients from 127.0.0.1 and .2 to the suite's address
	// (serviceIP), IPv6 ones from and to ::1.
	const a1, a2, v6 = "127.0.0.1", "127.0.0.2", "::1"
	d4 := serviceIP()
	type req struct {
		host     string
		src, dst string
		status   int
	}
	check := func(what string, cases []req) {
		t.Helper()
		// The last case is polled for (the Ingresses' pass), the others
		// then hold at once.
		last := cases[len(cases)-1]
		g.eventually(what, servesFrom(last.src, last.dst, httpPort, last.host, last.status))
		for _, c := range cases {
			if err := servesFrom(c.src, c.dst, httpPort, c.host, c.status)(); err != nil {
				t.Errorf("%s: %v", what, err)
			}
		}
	}
	check("ranges served", []req{
		{"allow4.example.com", a1, d4, 200},
		{"allow4.example.com", a2, d4, 403},
		{"allow4.example.com", v6, v6, 403}, // an IPv4 list allows no IPv6 client
		{"allow6.example.com", v6, v6, 200},
		{"allow6.example.com", a1, d4, 403}, // ::/0 allows no IPv4 client
		{"deny4.example.com", a1, d4, 200},
		{"deny4.example.com", v6, v6, 200},
		{"deny6.example.com", a1, d4, 200}, // ::/0 denies no IPv4 client
		{"both.example.com", a1, d4, 200},
		{"both.example.com", v6, v6, 200},
		{"base.example.com", a2, d4, 200},
		{"deny6.example.com", v6, v6, 403},
		{"deny4.example.com", a2, d4, 403},
		{"both.example.com", a2, d4, 403}, // denied inside the allow list
	})

	// Changed: allow4 now allows 127.0.0.2 only; deny4 loses its range.
	updateIngress(t, ing.Ingresses(ns), "allow4", func(mod *netv1.Ingress) {
		mod.Annotations[n+"allowlist-source-range"] = "127.0.0.2"
	})
	updateIngress(t, ing.Ingresses(ns), "deny4", func(mod *netv1.Ingress) {
		delete(mod.Annotations, n+"denylist-source-range")
	})
	check("ranges changed", []req{
		{"allow4.example.com", a1, d4, 403},
		{"allow4.example.com", a2, d4, 200},
		{"deny4.example.com", a2, d4, 200},
	})
	if r := g.reloads(); r != before {
		t.Errorf("Ingresses given, changed and relieved of source ranges reloaded HAProxy %d times, want 0", r-before)
	}

	// A range that does not parse: refused with an Event; the last good
	// ranges keep applying (never served open).
	updateIngress(t, ing.Ingresses(ns), "allow4", func(mod *netv1.Ingress) {
		mod.Annotations[n+"allowlist-source-range"] = "127.0.0.0/33"
	})
	g.eventually("an Event refuses the range", g.ingressEvent("allow4", "Refused", "allowlist-source-range"))
	for _, c := range []req{{"allow4.example.com", a1, d4, 403}, {"allow4.example.com", a2, d4, 200}} {
		if err := servesFrom(c.src, c.dst, httpPort, c.host, c.status)(); err != nil {
			t.Errorf("the last good ranges of a refused Ingress: %v", err)
		}
	}
	if t.Failed() {
		t.Log(strings.TrimSpace(g.ctlLog.String()))
	}
}

// postSize sends POST / with Host host and a body of n bytes (chunked
// when chunked) to serviceIP():port and returns the status.
func postSize(port int, host string, n int, chunked bool) (int, error) {
	var body io.Reader = strings.NewReader(strings.Repeat("x", n))
	if chunked {
		body = io.MultiReader(body) // no length known: sent chunked
	}
	return requestFrom(nil, http.MethodPost, port, host, "/", body, 3*time.Second)
}

// requestFrom sends method path with Host host and body to
// serviceIP():port on a connection of its own, from local (nil: any
// address), and returns the status.
func requestFrom(local net.Addr, method string, port int, host, path string, body io.Reader, timeout time.Duration) (int, error) {
	d := &net.Dialer{Timeout: 3 * time.Second, LocalAddr: local}
	c := &http.Client{Transport: &http.Transport{DisableKeepAlives: true, DialContext: d.DialContext}, Timeout: timeout}
	return statusOf(c, method, fmt.Sprintf("http://%s:%d%s", serviceIP(), port, path), host, body)
}

// TestIngressBodySize: proxy-body-size (ingress-nginx's and HAProxy
// Ingress's) on real HAProxy: a body larger than the limit is answered
// 413, by its Content-Length or, chunked, as buffered; one within it
// reaches the Pod; the limit set, changed and removed on a running
// controller: 0 reloads.
func TestIngressBodySize(t *testing.T) {
	g, ok := newIngressEnv(t)
	if !ok {
		return
	}
	ing, httpPort := g.ing, g.httpPort
	g.web("web", 0)
	n, hp := ingress.NginxPrefix, ingress.HAProxyPrefix
	g.create(ingressOf("base", "base.example.com", nil, prefix("/", "web")))
	g.start()
	sized := func(host string, size int, chunked bool, status int) func() error {
		return func() error {
			code, err := postSize(httpPort, host, size, chunked)
			if err != nil {
				return fmt.Errorf("POST %d bytes (chunked %v) to %s: %w", size, chunked, host, err)
			}
			if code != status {
				return fmt.Errorf("POST %d bytes (chunked %v) to %s: %d, want %d", size, chunked, host, code, status)
			}
			return nil
		}
	}
	g.eventually("the base Ingress serves", sized("base.example.com", 4000, false, 200))
	before := g.reloads()
	if _, err := ing.Ingresses(ns).Create(bg, ingressOf("small", "small.example.com", map[string]string{n + "proxy-body-size": "1k"}, prefix("/", "web")), metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	g.eventually("the limit applies", sized("small.example.com", 1025, false, 413))
	for _, c := range []struct {
		host    string
		size    int
		chunked bool
		status  int
	}{
		{"small.example.com", 1024, false, 200},
		{"small.example.com", 1025, true, 413},
		{"small.example.com", 1000, true, 200},
		{"base.example.com", 4000, true, 200},
	} {
		if err := sized(c.host, c.size, c.chunked, c.status)(); err != nil {
			t.Error(err)
		}
	}
	updateIngress(t, ing.Ingresses(ns), "small", func(mod *netv1.Ingress) {
		mod.Annotations = map[string]string{hp + "proxy-body-size": "2k"}
	})
	g.eventually("the limit changed", sized("small.example.com", 2000, false, 200))
	if err := sized("small.example.com", 2049, false, 413)(); err != nil {
		t.Error(err)
	}
	updateIngress(t, ing.Ingresses(ns), "small", func(mod *netv1.Ingress) {
		mod.Annotations = nil
	})
	g.eventually("the limit removed", sized("small.example.com", 4000, false, 200))
	if r := g.reloads(); r != before {
		t.Errorf("a body limit set, changed and removed reloaded HAProxy %d times, want 0", r-before)
	}
}

// getPathFrom sends GET path with Host host from address src to
// serviceIP():port and returns the status.
func getPathFrom(src string, port int, host, path string, timeout time.Duration) (int, error) {
	return requestFrom(&net.TCPAddr{IP: net.ParseIP(src)}, http.MethodGet, port, host, path, nil, timeout)
}

// TestIngressRateLimits: limit-rps and limit-connections (ingress-nginx's
// and HAProxy Ingress's) on real HAProxy: a client past its burst of
// 5×limit-rps gets 503 while another client is served, and a client in
// limit-whitelist is never limited; limit-rpm (ingress-nginx's) serves
// exactly its burst of 5×limit-rpm, then 503; a client with a
// request in progress gets 503 for a second one under
// limit-connections: 1, another client and the same client once the
// first ends are served; the limits set and changed on a running
// controller: 0 reloads.
func TestIngressRateLimits(t *testing.T) {
	g, ok := newIngressEnv(t)
	if !ok {
		return
	}
	ing, httpPort := g.ing, g.httpPort
	protoPod(t, "web", podAddrs[0], 8080)
	g.serviceOf("web", podAddrs[0], 8080)
	g.create(ingressOf("base", "base.example.com", nil, prefix("/", "web")))
	g.start()
	status := func(src, host, path string, want int) func() error {
		return func() error {
			code, err := getPathFrom(src, httpPort, host, path, 3*time.Second)
			if err != nil {
				return fmt.Errorf("GET %s%s from %s: %w", host, path, src, err)
			}
			if code != want {
				return fmt.Errorf("GET %s%s from %s: %d, want %d", host, path, src, code, want)
			}
			return nil
		}
	}
	g.eventually("the base Ingress serves", status("127.0.0.1", "base.example.com", "/", 200))
	before := g.reloads()
	n, hp := ingress.NginxPrefix, ingress.HAProxyPrefix
	for _, i := range []*netv1.Ingress{
		ingressOf("rps", "rps.example.com", map[string]string{n + "limit-rps": "2"}, prefix("/", "web")),
		ingressOf("conns", "conns.example.com", map[string]string{hp + "limit-connections": "1"}, prefix("/", "web")),
		ingressOf("exempt", "exempt.example.com", map[string]string{n + "limit-rps": "2", n + "limit-whitelist": "127.0.0.1/32, 2001:db8::/32"}, prefix("/", "web")),
		ingressOf("rpm", "rpm.example.com", map[string]string{n + "limit-rpm": "2"}, prefix("/", "web")),
	} {
		if _, err := ing.Ingresses(ns).Create(bg, i, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	g.eventually("the limited Ingresses serve", status("127.0.0.1", "conns.example.com", "/", 200))

	// burst: n requests one after another from src: the count of each status.
	burst := func(n int, src, host string) map[int]int {
		codes := map[int]int{}
		for range n {
			code, err := getPathFrom(src, httpPort, host, "/", 3*time.Second)
			if err != nil {
				t.Fatal(err)
			}
			codes[code]++
		}
		return codes
	}
	// limit-rps 2: a burst of 10 in 5 s; 30 requests at once exceed it.
	codes := burst(30, "127.0.0.1", "rps.example.com")
	if codes[503] == 0 || codes[200] < 5 {
		t.Errorf("30 requests at once under limit-rps 2: %v, want some 200 and then 503", codes)
	}
	if err := status("127.0.0.2", "rps.example.com", "/", 200)(); err != nil {
		t.Errorf("another client under limit-rps: %v", err)
	}

	// limit-rpm 2: a burst of 10 in 5 minutes; of 20 requests at once
	// exactly the first 10 are served (the refused ones do not count).
	g.eventually("the limit-rpm Ingress serves", status("127.0.0.3", "rpm.example.com", "/", 200))
	rpm := burst(20, "127.0.0.1", "rpm.example.com")
	if rpm[200] != 10 || rpm[503] != 10 {
		t.Errorf("20 requests at once under limit-rpm 2: %v, want 10 served and 10 refused", rpm)
	}
	if err := status("127.0.0.2", "rpm.example.com", "/", 200)(); err != nil {
		t.Errorf("another client under limit-rpm: %v", err)
	}

	// limit-whitelist: 127.0.0.1 is not limited, 127.0.0.2 is.
	g.eventually("the Ingress with exempt sources serves", status("127.0.0.1", "exempt.example.com", "/", 200))
	for _, c := range []struct {
		src     string
		limited bool
	}{{"127.0.0.1", false}, {"127.0.0.2", true}} {
		codes := burst(30, c.src, "exempt.example.com")
		if limited := codes[503] > 0; limited != c.limited || codes[200] < 5 {
			t.Errorf("30 requests at once from %s under limit-rps 2 and limit-whitelist 127.0.0.1: %v, want limited %v", c.src, codes, c.limited)
		}
	}

	// limit-connections 1: a second request beside one in progress.
	// A probe that reaches HAProxy before the slow request and is still
	// open when it arrives makes the slow request the second (503): it
	// then ends at once, and is sent again until one is in progress.
	var slow chan error
	startSlow := func() {
		slow = make(chan error, 1)
		go func(c chan error) {
			code, err := getPathFrom("127.0.0.1", httpPort, "conns.example.com", "/slow", 10*time.Second)
			if err == nil && code != 200 {
				err = fmt.Errorf("answered %d", code)
			}
			c <- err
		}(slow)
	}
	startSlow()
	refused := status("127.0.0.1", "conns.example.com", "/", 503)
	g.eventually("a second request beside one in progress is refused", func() error {
		select {
		case err := <-slow:
			startSlow()
			return fmt.Errorf("the slow request ended before a second was refused (%v): sent again", err)
		default:
		}
		return refused()
	})
	if err := status("127.0.0.2", "conns.example.com", "/", 200)(); err != nil {
		t.Errorf("another client under limit-connections: %v", err)
	}
	select {
	case err := <-slow:
		if err != nil {
			t.Errorf("the request in progress: %v", err)
		}
	case <-time.After(15 * time.Second):
		t.Fatal("the request in progress did not end within 15 s")
	}
	// HAProxy counts the connection until it has seen it close, a moment
	// after the client read its answer.
	g.eventually("the client is served once its request ended", status("127.0.0.1", "conns.example.com", "/", 200))

	// Changed: the rate limit raised far; the client is served again.
	updateIngress(t, ing.Ingresses(ns), "rps", func(mod *netv1.Ingress) {
		mod.Annotations[n+"limit-rps"] = "100000"
	})
	g.eventually("the raised limit serves", status("127.0.0.1", "rps.example.com", "/", 200))
	if r := g.reloads(); r != before {
		t.Errorf("rate and connection limits set and changed reloaded HAProxy %d times, want 0", r-before)
	}
}
