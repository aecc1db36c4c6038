package e2e

import (
	"fmt"
	"net/http"
	"strings"
	"testing"

	netv1 "k8s.io/api/networking/v1"

	"github.com/haproxy-k8s-sync/haproxy-k8s-sync/internal/ingress"
)

// TestIngressProxyRewrite: ingress-nginx's proxy-redirect-from/-to and
// proxy-cookie-domain/-path on real HAProxy (the Lua file's response
// action): a Pod's Location and Refresh beginning with the redirect's
// FROM get TO in its place, its Set-Cookie's Domain equal to the domain's
// FROM (case and a leading '.' aside) becomes TO, and a Path beginning
// with the path's FROM has TO in its place; other headers and cookies
// pass untouched. Given, changed and removed: 0 reloads. A regular
// expression: an Event, the last good version kept.
func TestIngressProxyRewrite(t *testing.T) {
	g, ok := newIngressEnv(t)
	if !ok {
		return
	}
	g.serve("web", 0, func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Location", "http://internal.local:8080/x?q=1")
		w.Header().Set("Refresh", "0; url=http://internal.local:8080/y")
		w.Header().Add("Set-Cookie", "a=1; Domain=.Internal.Local; Path=/internal/sub; HttpOnly")
		w.Header().Add("Set-Cookie", "b=2; Path=/other; Domain=other.local")
		w.WriteHeader(http.StatusFound)
	})
	const host = "app.example.com"
	g.create(ingressOf("app", host, nil, prefix("/", "web")))
	g.start()
	n := ingress.NginxPrefix
	expect := func(location, refresh string, cookies ...string) func() error {
		return func() error {
			code, _, hd, err := hiAsk(g.httpPort, "GET", host, "/", nil) // ingress_hiextauth_test.go
			if err != nil {
				return err
			}
			got := fmt.Sprintf("%d %s | %s | %s", code, hd.Get("Location"), hd.Get("Refresh"), strings.Join(hd.Values("Set-Cookie"), " | "))
			if want := fmt.Sprintf("302 %s | %s | %s", location, refresh, strings.Join(cookies, " | ")); got != want {
				return fmt.Errorf("answer %q, want %q", got, want)
			}
			return nil
		}
	}
	asIs := expect("http://internal.local:8080/x?q=1", "0; url=http://internal.local:8080/y",
		"a=1; Domain=.Internal.Local; Path=/internal/sub; HttpOnly", "b=2; Path=/other; Domain=other.local")
	g.eventually("served as the Pod answers", asIs)

	before := g.reloads()
	set := func(a map[string]string) {
		updateIngress(t, g.ing.Ingresses(ns), "app", func(o *netv1.Ingress) { o.Annotations = a })
	}
	all := map[string]string{
		n + "proxy-redirect-from": "http://internal.local:8080/", n + "proxy-redirect-to": "https://app.example.com/",
		n + "proxy-cookie-domain": "internal.local app.example.com", n + "proxy-cookie-path": "/internal/ /",
	}
	set(all)
	rewritten := expect("https://app.example.com/x?q=1", "0; url=https://app.example.com/y",
		"a=1; Domain=app.example.com; Path=/sub; HttpOnly", "b=2; Path=/other; Domain=other.local")
	g.eventually("rewritten", rewritten)
	set(map[string]string{n + "proxy-cookie-path": "/ /app/"})
	g.eventually("the cookie path alone, changed", expect("http://internal.local:8080/x?q=1", "0; url=http://internal.local:8080/y",
		"a=1; Domain=.Internal.Local; Path=/app/internal/sub; HttpOnly", "b=2; Path=/app/other; Domain=other.local"))
	set(all)
	g.eventually("rewritten again", rewritten)
	set(map[string]string{n + "proxy-redirect-from": "http://internal.local:8080/", n + "proxy-redirect-to": "https://app.example.com/",
		n + "proxy-cookie-path": "~^/internal(.*) $1"})
	g.eventually("an Event refuses a regular expression", g.ingressEvent("app", "Refused", "regular expressions are not served"))
	if err := rewritten(); err != nil {
		t.Errorf("the last good version: %v", err)
	}
	set(nil)
	g.eventually("removed", asIs)
	if r := g.reloads(); r != before {
		t.Errorf("proxy-redirect and proxy-cookie changes reloaded HAProxy %d times, want 0", r-before)
	}
}
