package e2e

import (
	"fmt"
	"net"
	"net/http"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/haproxy-k8s-sync/haproxy-k8s-sync/internal/ingress"
)

// corsRequest sends one request (method, Origin, and for OPTIONS an
// Access-Control-Request-Method) and returns its status and its
// Access-Control-* headers as "name=value" (lower case, without the
// prefix), space-separated.
func corsRequest(port int, host, method, path, origin string) (int, string, error) {
	c := &http.Client{Transport: &http.Transport{DisableKeepAlives: true}, Timeout: 3 * time.Second}
	req, err := http.NewRequest(method, fmt.Sprintf("http://%s:%d%s", serviceIP(), port, path), nil)
	if err != nil {
		return 0, "", err
	}
	req.Host = host
	req.Header.Set("Origin", origin)
	if method == http.MethodOptions {
		req.Header.Set("Access-Control-Request-Method", "PUT")
	}
	resp, err := c.Do(req)
	if err != nil {
		return 0, "", err
	}
	defer resp.Body.Close()
	var got []string
	for _, n := range []string{"Allow-Origin", "Allow-Credentials", "Allow-Methods", "Allow-Headers", "Max-Age"} {
		if v := resp.Header.Get("Access-Control-" + n); v != "" {
			got = append(got, strings.ToLower(n)+"="+v)
		}
	}
	return resp.StatusCode, strings.Join(got, " "), nil
}

// TestIngressCORSPreflight: ingress-nginx's enable-cors and cors-* and
// HAProxy Ingress's cors-enable on real HAProxy with real traffic. A
// preflight is answered by HAProxy (204) and never reaches the Pod;
// an allowed origin (exact, or a wildcard's subdomain) is echoed with
// the annotations' methods and max age, or each controller's defaults;
// an origin not allowed gets no CORS header; the Pod's own answers to
// allowed origins carry it. Added to a running controller: 0 reloads.
func TestIngressCORSPreflight(t *testing.T) {
	g, ok := newIngressEnv(t)
	if !ok {
		return
	}
	httpPort, create := g.httpPort, g.create
	var seen atomic.Int64
	l, err := net.Listen("tcp", net.JoinHostPort(podAddrs[0], "8080"))
	if err != nil {
		t.Fatal(err)
	}
	srv := &http.Server{ReadHeaderTimeout: 5 * time.Second, Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		seen.Add(1)
		fmt.Fprintf(w, "web %s %s", r.Method, r.URL.Path)
	})}
	go func() { _ = srv.Serve(l) }()
	t.Cleanup(func() { _ = srv.Close() })
	g.serviceOf("web", podAddrs[0], 8080)
	// The backend exists before the controller: a backend new to HAProxy
	// is structure, the annotations are not.
	create(ingressOf("base", "base.example.com", nil, prefix("/", "web")))
	g.start(leaderFlags...)
	g.eventually("the base Ingress serves", answers(httpPort, false, "base.example.com", "/x", 200, "web GET /x"))
	before := g.reloads()

	n, h := ingress.NginxPrefix, ingress.HAProxyPrefix
	create(ingressOf("nginx", "nginx.example.com", map[string]string{n + "enable-cors": "true",
		n + "cors-allow-origin": "https://app.example.com, https://*.example.org", n + "cors-allow-methods": "PUT, GET",
		n + "cors-allow-credentials": "false", n + "cors-max-age": "600"}, prefix("/", "web")))
	create(ingressOf("hap", "hap.example.com", map[string]string{h + "cors-enable": "true"}, prefix("/", "web")))
	preflight := func(host, origin string, want string) func() error {
		return func() error {
			before := seen.Load()
			code, got, err := corsRequest(httpPort, host, http.MethodOptions, "/p", origin)
			if err != nil {
				return err
			}
			if code != 204 || got != want {
				return fmt.Errorf("preflight %s from %s: %d %q, want 204 %q", host, origin, code, got, want)
			}
			if s := seen.Load() - before; s != 0 {
				return fmt.Errorf("preflight %s from %s reached the Pod (%d requests)", host, origin, s)
			}
			return nil
		}
	}
	g.eventually("the HAProxy Ingress one answers a preflight", preflight("hap.example.com", "https://any.example.net",
		"allow-origin=https://any.example.net allow-credentials=true allow-methods=GET,PUT,POST,DELETE,PATCH,OPTIONS "+
			"allow-headers=dnt,keep-alive,user-agent,x-requested-with,if-modified-since,cache-control,content-type,range,authorization max-age=86400"))
	const headers = " allow-headers=dnt,keep-alive,user-agent,x-requested-with,if-modified-since,cache-control,content-type,range,authorization"
	for _, c := range []struct{ origin, want string }{
		{"https://app.example.com", "allow-origin=https://app.example.com allow-methods=PUT,GET" + headers + " max-age=600"},
		{"https://a.b.example.org", "allow-origin=https://a.b.example.org allow-methods=PUT,GET" + headers + " max-age=600"},
		{"https://example.org", ""},
		{"http://app.example.com", ""},
	} {
		if err := preflight("nginx.example.com", c.origin, c.want)(); err != nil {
			t.Error(err)
		}
	}
	for _, c := range []struct{ origin, want string }{
		{"https://app.example.com", "allow-origin=https://app.example.com"},
		{"https://evil.example.com", ""},
	} {
		before := seen.Load()
		code, got, err := corsRequest(httpPort, "nginx.example.com", http.MethodPut, "/p", c.origin)
		if err != nil || code != 200 || got != c.want || seen.Load() != before+1 {
			t.Errorf("PUT from %s: %d %q (%v), Pod saw %d; want 200 %q, 1", c.origin, code, got, err, seen.Load()-before, c.want)
		}
	}
	if r := g.reloads(); r != before {
		t.Errorf("two Ingresses with CORS reloaded HAProxy %d times, want 0", r-before)
	}
}
