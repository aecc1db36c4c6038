package e2e

import (
	"fmt"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/haproxy-k8s-sync/haproxy-k8s-sync/internal/ingress"
)

// getCookie sends GET / with Host host to serviceIP():port with cookie
// ("" for none) and returns the Pod that answered (the body's first
// word) and the Set-Cookie header.
func getCookie(port int, host, cookie string) (pod, setCookie string, err error) {
	c := &http.Client{Transport: &http.Transport{DisableKeepAlives: true}, Timeout: 3 * time.Second}
	req, err := http.NewRequest(http.MethodGet, fmt.Sprintf("http://%s:%d/", serviceIP(), port), nil)
	if err != nil {
		return "", "", err
	}
	req.Host = host
	if cookie != "" {
		req.Header.Set("Cookie", cookie)
	}
	resp, err := c.Do(req)
	if err != nil {
		return "", "", err
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if resp.StatusCode != http.StatusOK {
		return "", "", fmt.Errorf("GET %s: %d %q", host, resp.StatusCode, b)
	}
	pod, _, _ = strings.Cut(string(b), " ")
	return pod, resp.Header.Get("Set-Cookie"), err
}

// TestIngressCookieAffinity: ingress-nginx's affinity: cookie with
// session-cookie-name, -max-age, -samesite, -path and -domain on real
// HAProxy, a Service of two Pods: the first answer sets the cookie
// (HttpOnly, Max-Age, SameSite, Path, Domain), and every request
// carrying it reaches the Pod that set it; without it requests go to
// both Pods; an Ingress without affinity to the same Service sets no
// cookie.
func TestIngressCookieAffinity(t *testing.T) {
	g, ok := newIngressEnv(t)
	if !ok {
		return
	}
	httpPod(t, "a", podAddrs[0], 8080)
	httpPod(t, "b", podAddrs[1], 8080)
	g.podsService("web", 8080, podAddrs[0], podAddrs[1]) // ingress_retry_test.go
	n := ingress.NginxPrefix
	g.create(
		ingressOf("sticky", "sticky.example.com", map[string]string{n + "affinity": "cookie", n + "session-cookie-name": "SRV",
			n + "session-cookie-max-age": "3600", n + "session-cookie-samesite": "lax", n + "session-cookie-path": "/shop",
			n + "session-cookie-domain": "sticky.example.com"}, prefix("/", "web")),
		ingressOf("plain", "plain.example.com", nil, prefix("/", "web")),
	)
	g.start()
	// bothPods is nil once requests without a cookie to host reach both
	// Pods within a few tries, and fails if one sets a cookie when want
	// is "" or sets none otherwise.
	bothPods := func(host string, wantCookie bool) func() error {
		return func() error {
			seen := map[string]bool{}
			var err error
			for range 8 {
				pod, set, e := getCookie(g.httpPort, host, "")
				if e != nil {
					return e
				}
				if (set != "") != wantCookie {
					return fmt.Errorf("GET %s: Set-Cookie %q", host, set)
				}
				seen[pod] = true
			}
			if !seen["a"] || !seen["b"] {
				err = fmt.Errorf("GET %s without a cookie reached %v, want a and b", host, seen)
			}
			return err
		}
	}
	g.eventually("the plain Ingress balances without a cookie", bothPods("plain.example.com", false))
	g.eventually("the sticky Ingress sets a cookie on first answers", bothPods("sticky.example.com", true))
	for _, first := range []string{"a", "b"} {
		var cookie string
		for range 8 { // the first answer from Pod first
			pod, set, err := getCookie(g.httpPort, "sticky.example.com", "")
			if err != nil {
				t.Fatal(err)
			}
			if pod == first {
				cookie = set
				break
			}
		}
		if cookie == "" {
			t.Fatalf("no answer of Pod %s set a cookie", first)
		}
		for _, attr := range []string{"SRV=", "HttpOnly", "Max-Age=3600", "SameSite=Lax", "Path=/shop", "domain=sticky.example.com"} {
			if !strings.Contains(cookie, attr) {
				t.Errorf("Set-Cookie %q: no %s", cookie, attr)
			}
		}
		// HAProxy writes path=/ itself; a browser takes the last Path
		// (RFC 6265, 5.3), which must be the Ingress's.
		if i := strings.LastIndex(strings.ToLower(cookie), "path="); i < 0 || !strings.HasPrefix(cookie[i:], "Path=/shop") {
			t.Errorf("Set-Cookie %q: the last Path is not /shop", cookie)
		}
		pair, _, _ := strings.Cut(cookie, ";")
		for range 6 {
			pod, _, err := getCookie(g.httpPort, "sticky.example.com", pair)
			if err != nil {
				t.Fatal(err)
			}
			if pod != first {
				t.Fatalf("with %s: Pod %s answered, want %s", pair, pod, first)
			}
		}
	}
}
