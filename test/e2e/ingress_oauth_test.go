package e2e

import (
	"fmt"
	"net/http"
	"strings"
	"sync"
	"testing"

	netv1 "k8s.io/api/networking/v1"

	"github.com/haproxy-k8s-sync/haproxy-k8s-sync/internal/ingress"
)

// TestIngressHAProxyOAuth: HAProxy Ingress's oauth: oauth2_proxy on real
// HAProxy (the auth-url family's Lua action) against a stand-in
// oauth2-proxy answering its /oauth2/auth 202 for a good session cookie
// (with X-Auth-Request-Email and -User) and 401 or 403 otherwise. Each
// request to the Ingress is first asked HEAD /oauth2/auth of the Service
// the Ingress's own /oauth2 path names, with the client's cookie; 2xx
// serves it with X-Auth-Request-Email set (the client's own removed), any
// failure is a 302 to /oauth2/start?rd=<path>; /oauth2/start itself is
// served by oauth2-proxy unasked. oauth added, oauth-headers changed
// (HEADER:SOURCE renames too: HEADER set from the answer's SOURCE) and
// oauth removed: 0 reloads. A source that is another HAProxy variable:
// an Event. A bad value: an Event, the last good
// configuration kept.
func TestIngressHAProxyOAuth(t *testing.T) {
	g, ok := newIngressEnv(t)
	if !ok {
		return
	}
	h := ingress.HAProxyPrefix
	g.serve("web", 0, func(w http.ResponseWriter, r *http.Request) {
		fmt.Fprintf(w, "web email=%s user=%s", r.Header.Get("X-Auth-Request-Email"), r.Header.Get("X-Auth-Request-User"))
	})
	var mu sync.Mutex
	var asked []string // "METHOD PATH cookie" of each /oauth2/auth request
	g.serve("oauth2-proxy", 1, func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path != "/oauth2/auth" {
			fmt.Fprintf(w, "oauth2-proxy %s rd=%s", r.URL.Path, r.URL.Query().Get("rd"))
			return
		}
		c, _ := r.Cookie("_oauth2_proxy")
		v := ""
		if c != nil {
			v = c.Value
		}
		mu.Lock()
		asked = append(asked, r.Method+" "+r.URL.Path+" "+v)
		mu.Unlock()
		switch v {
		case "good":
			w.Header().Set("X-Auth-Request-Email", "alice@example.com")
			w.Header().Set("X-Auth-Request-User", "alice")
			w.WriteHeader(http.StatusAccepted)
		case "forbidden":
			w.WriteHeader(http.StatusForbidden)
		default:
			w.WriteHeader(http.StatusUnauthorized)
		}
	})
	paths := []netv1.HTTPIngressPath{prefix("/oauth2", "oauth2-proxy"), prefix("/", "web")}
	g.create(
		ingressOf("app", "app.example.com", map[string]string{h + "oauth": "oauth2_proxy"}, paths...),
		ingressOf("open", "open.example.com", nil, paths...),
	)
	g.start()
	ask := func(host, path, cookie string, code int, body, location string) func() error {
		return func() error {
			hs := map[string]string{"X-Auth-Request-Email": "mallory@example.com"}
			if cookie != "" {
				hs["Cookie"] = "_oauth2_proxy=" + cookie
			}
			got, b, hd, err := hiAsk(g.httpPort, "GET", host, path, hs) // ingress_hiextauth_test.go
			if err != nil {
				return fmt.Errorf("GET %s%s cookie %q: %w", host, path, cookie, err)
			}
			if got != code || !strings.Contains(b, body) || hd.Get("Location") != location {
				return fmt.Errorf("GET %s%s cookie %q: %d %q Location %q, want %d with %q Location %q", host, path, cookie, got, b, hd.Get("Location"), code, body, location)
			}
			return nil
		}
	}
	g.eventually("the open Ingress serves", ask("open.example.com", "/", "", 200, "web", ""))
	g.eventually("the oauth Ingress asks oauth2-proxy", ask("app.example.com", "/", "good", 200, "web email=alice@example.com user=", ""))
	mu.Lock()
	asked = nil
	mu.Unlock()
	checkAll(t,
		ask("app.example.com", "/p?q=1", "", 302, "", "/oauth2/start?rd=/p"),
		ask("app.example.com", "/p", "forbidden", 302, "", "/oauth2/start?rd=/p"),
		ask("app.example.com", "/oauth2/start?rd=/p", "", 200, "oauth2-proxy /oauth2/start rd=/p", ""),
		ask("app.example.com", "/oauth2/sign_in", "", 200, "oauth2-proxy /oauth2/sign_in", ""),
	)
	mu.Lock()
	if want := []string{"HEAD /oauth2/auth ", "HEAD /oauth2/auth forbidden"}; strings.Join(asked, "|") != strings.Join(want, "|") {
		t.Errorf("oauth2-proxy was asked %q, want %q (its own paths never asked)", asked, want)
	}
	mu.Unlock()

	reloads := g.reloads()
	updateIngress(t, g.ing.Ingresses(ns), "open", func(mod *netv1.Ingress) { mod.Annotations = map[string]string{h + "oauth": "oauth2-proxy"} })
	g.eventually("oauth added", ask("open.example.com", "/x", "", 302, "", "/oauth2/start?rd=/x"))
	updateIngress(t, g.ing.Ingresses(ns), "open", func(mod *netv1.Ingress) {
		mod.Annotations = map[string]string{h + "oauth": "oauth2-proxy", h + "oauth-headers": "X-Auth-Request-User"}
	})
	g.eventually("oauth-headers changed", ask("open.example.com", "/", "good", 200, "web email=mallory@example.com user=alice", ""))
	// HAProxy Ingress's renames: HEADER:SOURCE sets HEADER from the
	// answer's SOURCE, a header or the variable HAProxy Ingress keeps it in.
	updateIngress(t, g.ing.Ingresses(ns), "open", func(mod *netv1.Ingress) {
		mod.Annotations = map[string]string{h + "oauth": "oauth2-proxy", h + "oauth-headers": "X-Auth-Request-Email:X-Auth-Request-User"}
	})
	g.eventually("oauth-headers renamed", ask("open.example.com", "/", "good", 200, "web email=alice user=", ""))
	updateIngress(t, g.ing.Ingresses(ns), "open", func(mod *netv1.Ingress) {
		mod.Annotations = map[string]string{h + "oauth": "oauth2-proxy",
			h + "oauth-headers": "X-Auth-Request-User:req.auth_response_header.x_auth_request_email"}
	})
	g.eventually("oauth-headers renamed from HAProxy Ingress's variable", ask("open.example.com", "/", "good", 200, "web email=mallory@example.com user=alice@example.com", ""))
	updateIngress(t, g.ing.Ingresses(ns), "open", func(mod *netv1.Ingress) { mod.Annotations = nil })
	g.eventually("oauth removed", ask("open.example.com", "/", "", 200, "web email=mallory@example.com", ""))
	if r := g.reloads(); r != reloads {
		t.Errorf("oauth added, changed, renamed and removed reloaded HAProxy %d times, want 0", r-reloads)
	}

	updateIngress(t, g.ing.Ingresses(ns), "app", func(mod *netv1.Ingress) { mod.Annotations = map[string]string{h + "oauth": "oauth1"} })
	g.eventually("an Event refuses the oauth value", g.ingressEvent("app", "Refused", "is not oauth2_proxy"))
	updateIngress(t, g.ing.Ingresses(ns), "open", func(mod *netv1.Ingress) {
		mod.Annotations = map[string]string{h + "oauth": "oauth2-proxy", h + "oauth-headers": "X-User:txn.user"}
	})
	g.eventually("an Event refuses a variable as a source", g.ingressEvent("open", "Refused", "the HAProxy variable"))
	checkAll(t, ask("open.example.com", "/", "", 200, "web email=mallory@example.com", ""))
	checkAll(t, ask("app.example.com", "/p", "", 302, "", "/oauth2/start?rd=/p"),
		ask("app.example.com", "/", "good", 200, "web email=alice@example.com", ""))
}
