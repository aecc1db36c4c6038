package e2e

import (
	"fmt"
	"io"
	"net"
	"net/http"
	"testing"
	"time"

	netv1 "k8s.io/api/networking/v1"

	"github.com/haproxy-k8s-sync/haproxy-k8s-sync/internal/ingress"
)

// getEdited sends GET path with Host host from address src to
// serviceIP():port, the request changed by edit first (nil: as it is), and
// returns the status.
func getEdited(src string, port int, host, path string, edit func(*http.Request)) (int, error) {
	d := &net.Dialer{Timeout: 3 * time.Second, LocalAddr: &net.TCPAddr{IP: net.ParseIP(src)}}
	c := &http.Client{Transport: &http.Transport{DisableKeepAlives: true, DialContext: d.DialContext}, Timeout: 3 * time.Second}
	req, err := http.NewRequest(http.MethodGet, fmt.Sprintf("http://%s:%d%s", serviceIP(), port, path), nil)
	if err != nil {
		return 0, err
	}
	req.Host = host
	if edit != nil {
		edit(req)
	}
	resp, err := c.Do(req)
	if err != nil {
		return 0, err
	}
	defer resp.Body.Close()
	_, _ = io.Copy(io.Discard, resp.Body)
	return resp.StatusCode, nil
}

// limitedGet is getEdited with X-Api-Client: apiClient when that is not
// empty.
func limitedGet(src string, port int, host, path, apiClient string) (int, error) {
	return getEdited(src, port, host, path, func(r *http.Request) {
		if apiClient != "" {
			r.Header.Set("X-Api-Client", apiClient)
		}
	})
}

// TestIngressGlobalRateLimit: ingress-nginx's global-rate-limit,
// -window, -key and -ignored-cidrs on real HAProxy and a real Pod: with a
// limit of 5 an hour, a client is served exactly 5 requests of a burst
// of 10 (the refused ones answered 429), the Ingress's two paths (two
// backends) counting together, while another client is served; a source
// of the ignored ranges is never limited; keyed by a request header, the
// exhausted client is served again under a new header value and each
// value gets its own 5; a window that is not a duration: an Event, the
// last good limit kept; removed: the client served again. Set, changed
// and removed on a running controller: 0 reloads.
func TestIngressGlobalRateLimit(t *testing.T) {
	g, ok := newIngressEnv(t)
	if !ok {
		return
	}
	protoPod(t, "web", podAddrs[0], 8080)
	g.serviceOf("web", podAddrs[0], 8080)
	g.serviceOf("web2", podAddrs[0], 8080)
	const host = "limited.example.com"
	g.create(ingressOf("app", host, nil, prefix("/b", "web2"), prefix("/", "web")))
	g.start()
	status := func(src, path, apiClient string, want int) func() error {
		return func() error {
			code, err := limitedGet(src, g.httpPort, host, path, apiClient)
			if err != nil {
				return fmt.Errorf("GET %s from %s (%q): %w", path, src, apiClient, err)
			}
			if code != want {
				return fmt.Errorf("GET %s from %s (%q): %d, want %d", path, src, apiClient, code, want)
			}
			return nil
		}
	}
	g.eventually("the Ingress serves", status("127.0.0.1", "/", "", 200))
	before := g.reloads()
	// burst: n requests one after another; the count of each status, and
	// whether a window's edge (an hour's) passed meanwhile (the estimate
	// then lets one more through).
	burst := func(n int, src, path, apiClient string) (map[int]int, bool) {
		start := time.Now()
		codes := map[int]int{}
		for range n {
			code, err := limitedGet(src, g.httpPort, host, path, apiClient)
			if err != nil {
				t.Fatal(err)
			}
			codes[code]++
		}
		return codes, start.Truncate(time.Hour) != time.Now().Truncate(time.Hour)
	}
	exactly := func(what string, codes map[int]int, edge bool, served int) {
		t.Helper()
		if edge {
			t.Logf("%s: %v across an hour's edge: not checked", what, codes)
			return
		}
		for code := range codes {
			if code != 200 && code != 429 {
				t.Errorf("%s: %v, want only 200 and 429", what, codes)
			}
		}
		if codes[200] != served {
			t.Errorf("%s: %v, want %d served and the rest 429", what, codes, served)
		}
	}
	n := ingress.NginxPrefix
	set := func(a map[string]string) {
		updateIngress(t, g.ing.Ingresses(ns), "app", func(o *netv1.Ingress) { o.Annotations = a })
	}
	limit := map[string]string{n + "global-rate-limit": "5", n + "global-rate-limit-window": "1h"}
	set(limit)
	g.eventually("the limit refuses a client past it", func() error {
		codes, _ := burst(6, "127.0.0.10", "/", "")
		if codes[429] == 0 {
			return fmt.Errorf("6 requests under a limit of 5: %v, none refused", codes)
		}
		return nil
	})
	// 3 on one path, 2 on the other: the Ingress's 5; then both refused.
	c1, e1 := burst(3, "127.0.0.11", "/", "")
	c2, e2 := burst(2, "127.0.0.11", "/b", "")
	exactly("3 requests on / and 2 on /b", map[int]int{200: c1[200] + c2[200], 429: c1[429] + c2[429]}, e1 || e2, 5)
	c3, e3 := burst(5, "127.0.0.11", "/b", "")
	c4, e4 := burst(5, "127.0.0.11", "/", "")
	exactly("10 more on /b and /", map[int]int{200: c3[200] + c4[200], 429: c3[429] + c4[429]}, e3 || e4, 0)
	c5, e5 := burst(10, "127.0.0.12", "/", "")
	exactly("another client's burst of 10", c5, e5, 5)

	// Ignored sources: neither limited nor counted.
	limit[n+"global-rate-limit-ignored-cidrs"] = "127.0.0.13/32, 2001:db8::/32"
	set(limit)
	g.eventually("an ignored source is not limited", func() error {
		codes, _ := burst(10, "127.0.0.13", "/", "")
		if codes[200] != 10 {
			return fmt.Errorf("10 requests from an ignored source: %v, want all served", codes)
		}
		return nil
	})
	if err := status("127.0.0.12", "/", "", 429)(); err != nil {
		t.Errorf("a client past the limit beside an ignored one: %v", err)
	}

	// Keyed by a request header: the exhausted client's new key is served.
	delete(limit, n+"global-rate-limit-ignored-cidrs")
	limit[n+"global-rate-limit-key"] = "${http_x_api_client}"
	set(limit)
	g.eventually("keyed by the header, the exhausted client is served", status("127.0.0.11", "/", "k1", 200))
	c6, e6 := burst(10, "127.0.0.11", "/", "k2")
	exactly("a header value's burst of 10", c6, e6, 5)
	if err := status("127.0.0.11", "/", "k3", 200)(); err != nil {
		t.Errorf("another header value: %v", err)
	}
	if err := status("127.0.0.11", "/b", "k2", 429)(); err != nil {
		t.Errorf("the exhausted header value on the other path: %v", err)
	}

	// A bad window: an Event, the last good limit kept.
	bad := map[string]string{n + "global-rate-limit": "5", n + "global-rate-limit-window": "60", n + "global-rate-limit-key": "${http_x_api_client}"}
	set(bad)
	g.eventually("an Event refuses a window that is not a duration", g.ingressEvent("app", "Refused", "is not a duration"))
	c7, e7 := burst(10, "127.0.0.11", "/", "k4")
	exactly("the last good limit's burst of 10", c7, e7, 5)

	// Removed: the exhausted client is served.
	set(nil)
	g.eventually("the limit removed", status("127.0.0.11", "/", "k2", 200))
	if r := g.reloads(); r != before {
		t.Errorf("global rate limits set, changed and removed reloaded HAProxy %d times, want 0", r-before)
	}
}
