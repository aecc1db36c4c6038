package e2e

import (
	"fmt"
	"testing"
	"time"

	netv1 "k8s.io/api/networking/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/haproxy-k8s-sync/haproxy-k8s-sync/internal/ingress"
)

// TestIngressRateLimits: limit-rps and limit-connections (ingress-nginx's
// and HAProxy Ingress's) on real HAProxy: a client past its burst of
// 5×limit-rps gets 503 while another client is served, and a client in
// limit-whitelist is never limited; limit-rpm (ingress-nginx's) serves
// exactly its burst of 5×limit-rpm, then 503; a client with a
// request in progress gets 503 for a second one under
// limit-connections: 1, another client and the same client once the
// first ends are served; the limits set and changed on a running
// controller: 0 reloads, except the frontend's first limit-rpm (its
// rules are new): one.
func TestIngressRateLimits(t *testing.T) {
	g, ok := newPlainIngressEnv(t)
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
	} {
		if _, err := ing.Ingresses(ns).Create(bg, i, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	g.eventually("the limited Ingresses serve", status("127.0.0.1", "conns.example.com", "/", 200))
	if r := g.reloads(); r != before {
		t.Errorf("limit-rps and limit-connections set: %d reloads, want 0", r-before)
	}

	// limit-rpm's rules (and the stick table's gpc0_rate) are written
	// while some Ingress of the frontend sets it: the first is one reload
	// (perhaps held back by the reload gate), served once it is done.
	first := g.reloads()
	if _, err := ing.Ingresses(ns).Create(bg, ingressOf("rpm", "rpm.example.com", map[string]string{n + "limit-rpm": "2"}, prefix("/", "web")), metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	g.eventually("the frontend's first limit-rpm reloads", func() error {
		if r := g.reloads(); r == first {
			return fmt.Errorf("no reload yet")
		}
		return nil
	})
	g.eventually("the limit-rpm Ingress serves", status("127.0.0.3", "rpm.example.com", "/", 200))
	if r := g.reloads(); r != first+1 {
		t.Errorf("the frontend's first limit-rpm: %d reloads, want 1 (its rules are new)", r-first)
	}
	before = g.reloads()

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
	// With the rules written, a second limit-rpm and a raised one: map
	// data.
	if _, err := ing.Ingresses(ns).Create(bg, ingressOf("rpm2", "rpm2.example.com", map[string]string{n + "limit-rpm": "1"}, prefix("/", "web")), metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	updateIngress(t, ing.Ingresses(ns), "rpm", func(mod *netv1.Ingress) {
		mod.Annotations[n+"limit-rpm"] = "100000"
	})
	g.eventually("the raised limit-rpm serves", status("127.0.0.1", "rpm.example.com", "/", 200))
	g.eventually("the second limit-rpm serves, then refuses", func() error {
		if err := status("127.0.0.4", "rpm2.example.com", "/", 200)(); err != nil {
			return err
		}
		codes := burst(6, "127.0.0.4", "rpm2.example.com") // its burst: 5
		if codes[503] == 0 {
			return fmt.Errorf("6 more requests under limit-rpm 1: %v, want some refused", codes)
		}
		return nil
	})
	if r := g.reloads(); r != before {
		t.Errorf("rate and connection limits changed and a second limit-rpm set, with its rules written: %d reloads, want 0", r-before)
	}
}
