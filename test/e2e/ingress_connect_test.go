package e2e

import (
	"bufio"
	"crypto/sha256"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"strings"
	"syscall"
	"testing"
	"time"

	netv1 "k8s.io/api/networking/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/haproxy-k8s-sync/haproxy-k8s-sync/internal/ingress"
)

// stalledListener listens at ip:port (an address of the test's network
// namespace) and never accepts, its accept queue full: the kernel drops
// every further SYN, so a connection attempt waits until the client's
// own connect timeout, as to a Pod that does not answer.
func stalledListener(t *testing.T, ip string, port int) {
	t.Helper()
	fd, err := syscall.Socket(syscall.AF_INET, syscall.SOCK_STREAM|syscall.SOCK_CLOEXEC, 0)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = syscall.Close(fd) })
	sa := &syscall.SockaddrInet4{Port: port}
	copy(sa.Addr[:], net.ParseIP(ip).To4())
	if err := syscall.Bind(fd, sa); err != nil {
		t.Fatal(err)
	}
	if err := syscall.Listen(fd, 0); err != nil {
		t.Fatal(err)
	}
	// Fill the queue (backlog 0 holds one connection): the attempt after
	// it must time out, never be refused.
	addr := net.JoinHostPort(ip, fmt.Sprint(port))
	for i := 0; ; i++ {
		c, err := net.DialTimeout("tcp", addr, 300*time.Millisecond)
		if err == nil {
			t.Cleanup(func() { _ = c.Close() })
			if i < 8 {
				continue
			}
			t.Fatalf("%s accepted %d connections without accept: its queue never fills", addr, i+1)
		}
		var ne net.Error
		if !errors.As(err, &ne) || !ne.Timeout() {
			t.Fatalf("a connection to the stalled %s: %v, want a timeout", addr, err)
		}
		return
	}
}

// bodyPod is an HTTP server at ip:port answering "len=N sha=HEX" of the
// request's body.
func bodyPod(t *testing.T, ip string, port int) {
	t.Helper()
	servePod(t, ip, port, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		h := sha256.New()
		n, err := io.Copy(h, r.Body)
		if err != nil {
			w.WriteHeader(http.StatusBadRequest)
			return
		}
		fmt.Fprintf(w, "len=%d sha=%x", n, h.Sum(nil))
	}))
}

// arrivalPod answers each request with the time (Unix ns) its handler
// began, before it reads the body.
func arrivalPod(t *testing.T, ip string, port int) {
	t.Helper()
	servePod(t, ip, port, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		at := time.Now().UnixNano()
		_, _ = io.Copy(io.Discard, r.Body)
		fmt.Fprintf(w, "at=%d", at)
	}))
}

// askedAfterBody sends POST / with Host host to serviceIP():port, its 4
// byte body 300 ms after its headers; nil when the Pod (arrivalPod) was
// asked after the body was sent: HAProxy waited for it.
func askedAfterBody(port int, host string) error {
	c, err := net.DialTimeout("tcp", net.JoinHostPort(serviceIP(), fmt.Sprint(port)), 3*time.Second)
	if err != nil {
		return err
	}
	defer c.Close()
	_ = c.SetDeadline(time.Now().Add(5 * time.Second))
	if _, err := fmt.Fprintf(c, "POST / HTTP/1.1\r\nHost: %s\r\nContent-Length: 4\r\nConnection: close\r\n\r\n", host); err != nil {
		return err
	}
	time.Sleep(300 * time.Millisecond) // the body's delay under test, not a wait for a state
	sent := time.Now().UnixNano()
	if _, err := c.Write([]byte("body")); err != nil {
		return err
	}
	resp, err := http.ReadResponse(bufio.NewReader(c), nil)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	var at int64
	if _, err := fmt.Sscanf(string(b), "at=%d", &at); err != nil || resp.StatusCode != 200 {
		return fmt.Errorf("POST %s: %d %q", host, resp.StatusCode, b)
	}
	if at < sent {
		return fmt.Errorf("POST %s: the Pod was asked %v before the body was sent", host, time.Duration(sent-at))
	}
	return nil
}

// postBody sends POST / with Host host and n bytes of a pattern (chunked
// when chunked) to serviceIP():port; nil once the Pod reports the very body.
func postBody(port int, host string, n int, chunked bool) error {
	b := make([]byte, n)
	for i := range b {
		b[i] = byte(i * 7 % 251)
	}
	var body io.Reader = strings.NewReader(string(b))
	if chunked {
		body = io.MultiReader(body) // no length known: sent chunked
	}
	req, err := http.NewRequest(http.MethodPost, fmt.Sprintf("http://%s:%d/", serviceIP(), port), body)
	if err != nil {
		return err
	}
	req.Host = host
	c := &http.Client{Transport: &http.Transport{DisableKeepAlives: true}, Timeout: 5 * time.Second}
	resp, err := c.Do(req)
	if err != nil {
		return fmt.Errorf("POST %d bytes (chunked %v): %w", n, chunked, err)
	}
	defer resp.Body.Close()
	got, err := io.ReadAll(resp.Body)
	if err != nil {
		return err
	}
	if want := fmt.Sprintf("len=%d sha=%x", n, sha256.Sum256(b)); resp.StatusCode != 200 || string(got) != want {
		return fmt.Errorf("POST %d bytes (chunked %v): %d %q, want 200 %q", n, chunked, resp.StatusCode, got, want)
	}
	return nil
}

// failsWithin is nil once GET / with Host host is answered 503 after at
// least lo and at most hi (a Pod that never accepts: HAProxy's connect
// timeout, three tries: retries 2).
func failsWithin(port int, host string, lo, hi time.Duration) func() error {
	return func() error {
		start := time.Now()
		code, err := requestFrom(nil, http.MethodGet, port, host, "/", nil, hi)
		took := time.Since(start)
		if err != nil {
			return fmt.Errorf("GET %s: %w after %v", host, err, took.Round(time.Millisecond))
		}
		if code != http.StatusServiceUnavailable || took < lo || took > hi {
			return fmt.Errorf("GET %s: %d after %v, want 503 after %v to %v", host, code, took.Round(time.Millisecond), lo, hi)
		}
		return nil
	}
}

// noEvent is nil when Ingress name has no Event whose message contains text.
func (g *gwEnv) noEvent(name, text string) error {
	evs, err := g.client.CoreV1().Events(ns).List(bg, metav1.ListOptions{FieldSelector: "involvedObject.name=" + name})
	if err != nil {
		return err
	}
	for _, e := range evs.Items {
		if strings.Contains(e.Message, text) {
			return fmt.Errorf("Ingress %s: Event %s %q", name, e.Reason, e.Message)
		}
	}
	return nil
}

// TestIngressConnectTimeoutAndBodyBuffer: ingress-nginx's
// proxy-connect-timeout and client-body-buffer-size on real HAProxy.
// A Pod that never accepts (its SYNs dropped) is answered 503 after the
// Ingress's connect timeout of 1 s per try (three tries: 3 s, not the
// defaults' 15 s); with --backend-pool a second Ingress with the same
// timeout (HAProxy Ingress's timeout-connect: 1s) to another Service
// takes a spare of that class: 0 reloads. A third with a value not in
// use yet (2 s) is answered 503 after three tries of 2 s; on HAProxy 3.4
// (a connect timeout per request, map data) with 0 reloads.
// Bodies below and above client-body-buffer-size (and HAProxy's 16 KB
// buffer), with a length or chunked, reach the Pod intact; the key is no
// UnsupportedAnnotation. proxy-request-buffering on: the Pod is asked
// only once the body came (sent 300 ms after the headers), no Event;
// off: a Warning UnsupportedAnnotation. A bad value of either: an Event, the last good
// version keeps serving.
func TestIngressConnectTimeoutAndBodyBuffer(t *testing.T) {
	g, ok := newIngressEnv(t)
	if !ok {
		return
	}
	n := ingress.NginxPrefix
	bodyPod(t, podAddrs[0], 8080)
	g.serviceOf("body", podAddrs[0], 8080)
	stalledListener(t, podAddrs[1], 8080)
	g.serviceOf("stall", podAddrs[1], 8080)
	g.serviceOf("stall2", podAddrs[1], 8080)
	g.create(ingressOf("body", "body.example.com", map[string]string{n + "client-body-buffer-size": "1k",
		n + "proxy-body-size": "2m", n + "proxy-buffering": "off", n + "proxy-request-buffering": "off"}, prefix("/", "body")))
	arrivalPod(t, podAddrs[0], 8081)
	g.serviceOf("arrival", podAddrs[0], 8081)
	g.create(ingressOf("late", "late.example.com", map[string]string{n + "proxy-request-buffering": "on"}, prefix("/", "arrival")))
	g.create(ingressOf("slow", "slow.example.com", map[string]string{n + "proxy-connect-timeout": "1"}, prefix("/", "stall")))
	// Low water 0: the pool does not top a class up after a spare is
	// taken (that growth is a reload of its own, after the change is
	// served), so the reload count is the change's alone.
	g.start("--backend-pool=4", "--backend-pool-low-water=0")
	g.eventually("the body Ingress serves", func() error { return postBody(g.httpPort, "body.example.com", 10, false) })
	for _, c := range []struct {
		size    int
		chunked bool
	}{{1000, false}, {1025, false}, {100 << 10, false}, {100 << 10, true}, {1 << 20, true}} {
		if err := postBody(g.httpPort, "body.example.com", c.size, c.chunked); err != nil {
			t.Error(err)
		}
	}
	g.eventually("proxy-buffering reported", g.ingressEvent("body", "UnsupportedAnnotation", "proxy-buffering"))
	if err := g.noEvent("body", "client-body-buffer-size"); err != nil {
		t.Error(err)
	}
	// proxy-request-buffering on: the Pod is asked once the body came;
	// off is reported (the frontend buffers every request).
	g.eventually("proxy-request-buffering on serves", func() error { return askedAfterBody(g.httpPort, "late.example.com") })
	if err := g.noEvent("late", "proxy-request-buffering"); err != nil {
		t.Error(err)
	}
	g.eventually("proxy-request-buffering off reported", g.ingressEvent("body", "UnsupportedAnnotation", "proxy-request-buffering"))

	lo, hi := 2500*time.Millisecond, 8*time.Second // 3 tries of 1 s; the defaults' 5 s would be 15 s
	g.eventually("proxy-connect-timeout 1 s", failsWithin(g.httpPort, "slow.example.com", lo, hi))
	before := g.reloads()
	// HAProxy Ingress's key, the same timeout: the same class.
	g.create(ingressOf("slow2", "slow2.example.com", map[string]string{ingress.HAProxyPrefix + "timeout-connect": "1s"}, prefix("/", "stall2")))
	g.eventually("a second Ingress with 1 s (timeout-connect)", failsWithin(g.httpPort, "slow2.example.com", lo, hi))
	if r := g.reloads(); r != before {
		t.Errorf("a new Service's backend of a connect timeout in use reloaded HAProxy %d times, want 0", r-before)
	}
	// A value no Ingress used yet: on 3.4 the path's map data (HAProxy's
	// set-timeout connect), no reload; on 2.6 and 3.0 backends of their
	// own (a class the pool does not hold: its growth's reload).
	before = g.reloads()
	g.serviceOf("stall3", podAddrs[1], 8080)
	g.create(ingressOf("slow3", "slow3.example.com", map[string]string{n + "proxy-connect-timeout": "2"}, prefix("/", "stall3")))
	g.eventually("a new connect timeout, 2 s", failsWithin(g.httpPort, "slow3.example.com", 5500*time.Millisecond, 12*time.Second))
	r := g.reloads() - before
	if haproxyVersion(t).ConnectPerRequest() && r != 0 {
		t.Errorf("a connect timeout new to HAProxy 3.4 reloaded it %d times, want 0 (map data)", r)
	}
	t.Logf("a connect timeout new to HAProxy %s: %d reloads", haproxyVersion(t), r)

	updateIngress(t, g.ing.Ingresses(ns), "slow", func(mod *netv1.Ingress) { mod.Annotations[n+"proxy-connect-timeout"] = "1s" })
	updateIngress(t, g.ing.Ingresses(ns), "body", func(mod *netv1.Ingress) { mod.Annotations[n+"client-body-buffer-size"] = "1kb" })
	g.eventually("a bad proxy-connect-timeout refused", g.ingressEvent("slow", "Refused", "proxy-connect-timeout"))
	g.eventually("a bad client-body-buffer-size refused", g.ingressEvent("body", "Refused", "client-body-buffer-size"))
	if err := failsWithin(g.httpPort, "slow.example.com", lo, hi)(); err != nil {
		t.Errorf("the last good version: %v", err)
	}
	if err := postBody(g.httpPort, "body.example.com", 100<<10, true); err != nil {
		t.Errorf("the last good version: %v", err)
	}
}
