package e2e

import (
	"fmt"
	"io"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	netv1 "k8s.io/api/networking/v1"

	"github.com/haproxy-k8s-sync/haproxy-k8s-sync/internal/ingress"
)

// hiAsk sends method path with Host host and the headers h to
// serviceIP():port, following no redirect: the answer's status, body and
// headers.
func hiAsk(port int, method, host, path string, h map[string]string) (int, string, http.Header, error) {
	c := &http.Client{Transport: &http.Transport{DisableKeepAlives: true}, Timeout: 10 * time.Second,
		CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	req, err := http.NewRequest(method, fmt.Sprintf("http://%s:%d%s", serviceIP(), port, path), nil)
	if err != nil {
		return 0, "", nil, err
	}
	req.Host = host
	for k, v := range h {
		req.Header.Set(k, v)
	}
	resp, err := c.Do(req)
	if err != nil {
		return 0, "", nil, err
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(b), resp.Header, nil
}

// TestIngressHAProxyExtAuth: HAProxy Ingress's auth-url family on real
// HAProxy (the same Lua action as ingress-nginx's auth-url) against a
// real auth server. With auth-url alone every header of a 2xx answer
// reaches the Pod (the client's own X-User replaced) and an answer that
// is not 2xx reaches the client as it is: 403 with its body and headers,
// 302 with its Location; svc://NAME:PORT/PATH goes through HAProxy's own
// backend of the Service, with auth-headers-request (only X-Token sent),
// auth-headers-succeed (only X-User passed), auth-headers-fail (only
// X-Reason) and auth-method "*" (the client's POST); auth-signin, a
// log-format with %[hdr(host)]%[path], takes every failure (401 and 403)
// as a 302 written as it is; auth-headers-fail "-": any failure 403; an
// auth server that refuses connections: HAProxy's httpclient's 503;
// svc://NAMESPACE/NAME:PORT/PATH another namespace's Service. auth-url added, changed and
// removed: 0 reloads. A malformed value: an Event, the last good
// configuration kept.
func TestIngressHAProxyExtAuth(t *testing.T) {
	g, ok := newIngressEnv(t)
	if !ok {
		return
	}
	h := ingress.HAProxyPrefix
	g.serve("web", 0, func(w http.ResponseWriter, r *http.Request) {
		fmt.Fprintf(w, "web user=%s role=%s ctype=%s token=%s", r.Header.Get("X-User"), r.Header.Get("X-User-Role"),
			r.Header.Get("Content-Type"), r.Header.Get("X-Token"))
	})
	var mu sync.Mutex
	var last *http.Request // the last request the auth server was asked
	servePod(t, podAddrs[1], 9000, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		last = r
		mu.Unlock()
		switch r.Header.Get("X-Token") {
		case "ok":
			w.Header().Set("X-User", "alice")
			w.Header().Set("X-User-Role", "admin")
			w.Header().Set("Content-Type", "text/x-auth")
			w.WriteHeader(http.StatusOK)
		case "no":
			w.Header().Set("X-Reason", "nope")
			w.Header().Set("X-Hidden", "h")
			w.WriteHeader(http.StatusForbidden)
			fmt.Fprint(w, "denied by auth")
		case "moved":
			w.Header().Set("Location", "https://elsewhere.example.com/")
			w.WriteHeader(http.StatusFound)
		default:
			w.Header().Set("WWW-Authenticate", `Bearer realm="hi"`)
			w.WriteHeader(http.StatusUnauthorized)
		}
	}))
	asked := func() (method, token, secret string) {
		mu.Lock()
		defer mu.Unlock()
		if last == nil {
			return "", "", ""
		}
		return last.Method, last.Header.Get("X-Token"), last.Header.Get("X-Secret")
	}
	authURL := "http://" + podAddrs[1] + ":9000/auth"
	g.create(
		ingressOf("open", "open.example.com", nil, prefix("/", "web")),
		ingressOf("plain", "plain.example.com", map[string]string{h + "auth-url": authURL}, prefix("/", "web")),
		ingressOf("svc", "svc.example.com", map[string]string{h + "auth-url": "svc://authsvc:9000/auth", h + "auth-method": "*",
			h + "auth-headers-request": "X-Tok*", h + "auth-headers-succeed": "X-User", h + "auth-headers-fail": "X-Reason"}, prefix("/", "web")),
		ingressOf("signin", "signin.example.com", map[string]string{h + "auth-url": authURL,
			h + "auth-signin": "https://login.example.com/start?rd=http://%[hdr(host)]%[path]"}, prefix("/", "web")),
		ingressOf("deny", "deny.example.com", map[string]string{ingress.HAProxyOldPrefix + "auth-url": authURL, h + "auth-headers-fail": "-"}, prefix("/", "web")),
		ingressOf("down", "down.example.com", map[string]string{h + "auth-url": "http://" + podAddrs[1] + ":9001/auth"}, prefix("/", "web")),
	)
	g.podsServiceAt(ns, "authsvc", 9000, 9000, podAddrs[1])
	g.podsServiceIn("auth", "authsvc", 9000, podAddrs[1]) // port 80
	g.create(ingressOf("otherns", "otherns.example.com", map[string]string{h + "auth-url": "svc://auth/authsvc:80/auth"}, prefix("/", "web")))
	g.start()
	type want struct {
		code   int
		body   string            // a part of it
		header map[string]string // "" for absent
	}
	ask := func(method, host, path string, hs map[string]string, w want) func() error {
		return func() error {
			code, body, got, err := hiAsk(g.httpPort, method, host, path, hs)
			if err != nil {
				return fmt.Errorf("%s %s%s %v: %w", method, host, path, hs, err)
			}
			if code != w.code || !strings.Contains(body, w.body) {
				return fmt.Errorf("%s %s%s %v: %d %q, want %d with %q", method, host, path, hs, code, body, w.code, w.body)
			}
			for k, v := range w.header {
				if got.Get(k) != v {
					return fmt.Errorf("%s %s%s %v: %s %q, want %q", method, host, path, hs, k, got.Get(k), v)
				}
			}
			return nil
		}
	}
	tok := func(t string) map[string]string {
		return map[string]string{"X-Token": t, "X-User": "mallory", "X-Secret": "s"}
	}
	g.eventually("the open Ingress serves", ask("GET", "open.example.com", "/", nil, want{200, "web", nil}))
	g.eventually("the plain Ingress asks", ask("GET", "plain.example.com", "/", tok("ok"), want{200, "user=alice role=admin ctype=text/x-auth token=ok", nil}))
	checkAll(t,
		ask("GET", "plain.example.com", "/", tok("no"), want{403, "denied by auth", map[string]string{"X-Reason": "nope", "X-Hidden": "h"}}),
		ask("GET", "plain.example.com", "/", tok("moved"), want{302, "", map[string]string{"Location": "https://elsewhere.example.com/"}}),
		ask("GET", "plain.example.com", "/", tok(""), want{401, "", map[string]string{"WWW-Authenticate": `Bearer realm="hi"`}}),
		ask("GET", "svc.example.com", "/", tok("ok"), want{200, "user=alice role= ctype= token=ok", nil}),
		ask("GET", "svc.example.com", "/", tok("no"), want{403, "denied by auth", map[string]string{"X-Reason": "nope", "X-Hidden": ""}}),
		ask("GET", "signin.example.com", "/p?q=1", tok(""), want{302, "", map[string]string{"Location": "https://login.example.com/start?rd=http://signin.example.com/p"}}),
		ask("GET", "signin.example.com", "/p", tok("no"), want{302, "", map[string]string{"Location": "https://login.example.com/start?rd=http://signin.example.com/p"}}),
		ask("GET", "signin.example.com", "/", tok("ok"), want{200, "user=alice", nil}),
		ask("GET", "deny.example.com", "/", tok(""), want{403, "", map[string]string{"WWW-Authenticate": ""}}),
		ask("GET", "deny.example.com", "/", tok("ok"), want{200, "user=alice", nil}),
		ask("GET", "otherns.example.com", "/", tok("ok"), want{200, "user=alice role=admin", nil}),
		ask("GET", "otherns.example.com", "/", tok("no"), want{403, "denied by auth", nil}),
		// no answer from the server: the httpclient's own 503
		ask("GET", "down.example.com", "/", tok("ok"), want{503, "", nil}),
	)
	// auth-method "*" and auth-headers-request: the client's POST, only
	// X-Token sent (not the client's X-Secret).
	checkAll(t, ask("POST", "svc.example.com", "/", tok("ok"), want{200, "user=alice", nil}))
	if m, tk, sec := asked(); m != "POST" || tk != "ok" || sec != "" {
		t.Errorf("svc's auth request: %s with X-Token %q and X-Secret %q, want POST, ok and none", m, tk, sec)
	}
	checkAll(t, ask("GET", "plain.example.com", "/", tok("ok"), want{200, "user=alice", nil}))
	if m, _, sec := asked(); m != "GET" || sec != "s" {
		t.Errorf("plain's auth request: %s with X-Secret %q, want GET and every header", m, sec)
	}

	reloads := g.reloads()
	updateIngress(t, g.ing.Ingresses(ns), "open", func(mod *netv1.Ingress) { mod.Annotations = map[string]string{h + "auth-url": authURL} })
	g.eventually("auth-url added", ask("GET", "open.example.com", "/", tok("no"), want{403, "denied by auth", nil}))
	updateIngress(t, g.ing.Ingresses(ns), "open", func(mod *netv1.Ingress) {
		mod.Annotations = map[string]string{h + "auth-url": authURL, h + "auth-headers-fail": "-"}
	})
	g.eventually("auth-headers-fail changed", ask("GET", "open.example.com", "/", tok(""), want{403, "", nil}))
	updateIngress(t, g.ing.Ingresses(ns), "open", func(mod *netv1.Ingress) { mod.Annotations = nil })
	g.eventually("auth-url removed", ask("GET", "open.example.com", "/", tok(""), want{200, "web", nil}))
	if r := g.reloads(); r != reloads {
		t.Errorf("HAProxy Ingress's auth-url added, changed and removed reloaded HAProxy %d times, want 0", r-reloads)
	}

	updateIngress(t, g.ing.Ingresses(ns), "plain", func(mod *netv1.Ingress) {
		mod.Annotations = map[string]string{h + "auth-url": authURL, h + "auth-signin": "https://login.example.com/?u=%[req.cook(sid)]"}
	})
	g.eventually("an Event refuses the auth-signin", g.ingressEvent("plain", "Refused", "is not one of the samples"))
	checkAll(t, ask("GET", "plain.example.com", "/", tok("no"), want{403, "denied by auth", nil}),
		ask("GET", "plain.example.com", "/", tok("ok"), want{200, "user=alice", nil}))
}
