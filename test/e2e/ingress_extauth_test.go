package e2e

import (
	"fmt"
	"io"
	"net/http"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	netv1 "k8s.io/api/networking/v1"

	"github.com/haproxy-k8s-sync/haproxy-k8s-sync/internal/ingress"
	"github.com/haproxy-k8s-sync/haproxy-k8s-sync/internal/testing/testcert"
)

// authAnswer is what a request to an Ingress got: its status, body and
// Location and WWW-Authenticate headers.
type authAnswer struct {
	code                 int
	body, loc, challenge string
}

// askThrough sends GET path with Host host to serviceIP():port with the
// header X-Token: token (none when "") and a client's own X-User; no
// redirect is followed.
func askThrough(port int, host, path, token string) (authAnswer, error) {
	c := &http.Client{Transport: &http.Transport{DisableKeepAlives: true}, Timeout: 10 * time.Second,
		CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	req, err := http.NewRequest(http.MethodGet, fmt.Sprintf("http://%s:%d%s", serviceIP(), port, path), nil)
	if err != nil {
		return authAnswer{}, err
	}
	req.Host = host
	req.Header.Set("X-User", "mallory") // replaced by the auth server's answer
	if token != "" {
		req.Header.Set("X-Token", token)
	}
	resp, err := c.Do(req)
	if err != nil {
		return authAnswer{}, err
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return authAnswer{resp.StatusCode, string(b), resp.Header.Get("Location"), resp.Header.Get("WWW-Authenticate")}, nil
}

// TestIngressExtAuth: ingress-nginx's auth-url with auth-response-headers
// and auth-signin on real HAProxy (its Lua httpclient), against a real
// auth server: its 2xx lets the request through with its X-User (the
// client's own X-User replaced), 401 (with its WWW-Authenticate) and 403
// reach the client, 401 with auth-signin redirects there with rd= the
// original URL, any other answer and an auth server that refuses
// connections are 500; an Ingress without auth-url never asks. An
// auth-url naming a cluster Service (NAME.NS.svc.cluster.local) is asked
// through HAProxy's own backend of that Service, of the Ingress's
// namespace or another one; over https (authtls.NS.svc.cluster.local,
// port 443) with TLS to its servers, the URL's host as SNI and Host, the
// server's certificate (of a CA HAProxy is not given) not verified, as
// ingress-nginx by default. nginx variables ($host,
// $escaped_request_uri, $scheme, $http_*, $arg_*, $uri, $request_method)
// in the auth URL (its query and its host) and in auth-signin
// (oauth2-proxy's https://$host/oauth2/start?rd=$escaped_request_uri)
// are expanded from each request; an unknown one refuses. auth-url
// added, changed and removed on a running controller: 0 reloads. A
// malformed auth-url: an Event, the last good configuration kept.
func TestIngressExtAuth(t *testing.T) {
	g, ok := newIngressEnv(t)
	if !ok {
		return
	}
	n := ingress.NginxPrefix
	g.serve("web", 0, func(w http.ResponseWriter, r *http.Request) {
		fmt.Fprintf(w, "web user=%s token=%s", r.Header.Get("X-User"), r.Header.Get("X-Token"))
	})
	var asked atomic.Int64
	var origin atomic.Value
	authServer := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		asked.Add(1)
		origin.Store(r.Header.Get("X-Original-URL"))
		if r.URL.Path == "/deny" {
			w.WriteHeader(http.StatusForbidden)
			return
		}
		if r.URL.Path == "/vars" { // the query it was asked with, as the user
			w.Header().Set("X-User", r.URL.RawQuery)
			w.WriteHeader(http.StatusOK)
			return
		}
		switch r.Header.Get("X-Token") {
		case "ok":
			user := "alice"
			if r.TLS != nil { // over https: the server name HAProxy sent, and the Host
				user += " sni=" + r.TLS.ServerName + " host=" + r.Host
			}
			w.Header().Set("X-User", user)
			w.WriteHeader(http.StatusOK)
		case "no":
			w.WriteHeader(http.StatusForbidden)
		case "boom":
			w.WriteHeader(http.StatusBadGateway)
		default:
			w.Header().Set("WWW-Authenticate", `Bearer realm="test"`)
			w.WriteHeader(http.StatusUnauthorized)
		}
	})
	servePod(t, podAddrs[1], 9000, authServer)
	// The same auth server over https, with a certificate of a CA HAProxy
	// is not given (ingress-nginx does not verify the auth server's).
	tlsName := "authtls." + ns + ".svc.cluster.local"
	serveTLSPod(t, podAddrs[1], 9443, testcert.Issue(t, testcert.Spec{CN: tlsName, DNS: []string{tlsName}}, testcert.CA(t, "auth CA")), authServer)
	authURL := "http://" + podAddrs[1] + ":9000/auth"
	guarded := map[string]string{n + "auth-url": authURL, n + "auth-response-headers": "X-User"}
	g.create(
		ingressOf("open", "open.example.com", nil, prefix("/", "web")),
		ingressOf("guarded", "guarded.example.com", guarded, prefix("/", "web")),
		ingressOf("signin", "signin.example.com", map[string]string{n + "auth-url": authURL, n + "auth-signin": "https://login.example.com/start"}, prefix("/", "web")),
		ingressOf("down", "down.example.com", map[string]string{n + "auth-url": "http://" + podAddrs[1] + ":9001/auth"}, prefix("/", "web")),
		// A cluster Service, reached through HAProxy's own backend of it.
		ingressOf("svc", "svc.example.com", map[string]string{n + "auth-url": "http://authsvc." + ns + ".svc.cluster.local/auth",
			n + "auth-response-headers": "X-User"}, prefix("/", "web")),
		// nginx variables, expanded from each request by the Lua action:
		// in the auth URL's query, in its host (an Ingress of every host,
		// asked with the address of the auth server as Host) and
		// oauth2-proxy's sign-in form.
		ingressOf("vars", "vars.example.com", map[string]string{n + "auth-response-headers": "X-User",
			n + "auth-url": "http://" + podAddrs[1] + ":9000/vars?host=$host&rd=$escaped_request_uri&s=$scheme&t=$http_x_token&p=$arg_page&u=${uri}&m=$request_method"},
			prefix("/", "web")),
		ingressOf("anyhost", "", map[string]string{n + "auth-url": "http://$host:9000/auth", n + "auth-response-headers": "X-User"}, prefix("/", "web")),
		ingressOf("oauth", "oauth.example.com", map[string]string{n + "auth-url": authURL,
			n + "auth-signin": "https://$host/oauth2/start?rd=$escaped_request_uri"}, prefix("/", "web")),
	)
	g.podsService("authsvc", 9000, podAddrs[1])
	// A cluster Service over https (port 443 when none is named): its own
	// backend speaking TLS to the servers.
	g.podsServiceAt(ns, "authtls", 443, 9443, podAddrs[1])
	g.create(ingressOf("svctls", "svctls.example.com", map[string]string{n + "auth-url": "https://" + tlsName + "/auth",
		n + "auth-response-headers": "X-User"}, prefix("/", "web")))
	// Another namespace's Service (oauth2-proxy's usual place): the same.
	g.podsServiceIn("auth", "authsvc", 9000, podAddrs[1])
	g.create(ingressOf("otherns", "otherns.example.com", map[string]string{n + "auth-url": "http://authsvc.auth.svc.cluster.local/auth",
		n + "auth-response-headers": "X-User"}, prefix("/", "web")))
	g.start()
	want := func(host, path, token string, code int, check func(a authAnswer) error) func() error {
		return func() error {
			a, err := askThrough(g.httpPort, host, path, token)
			if err != nil {
				return fmt.Errorf("%s%s with token %q: %w", host, path, token, err)
			}
			if a.code != code {
				return fmt.Errorf("%s%s with token %q: %d %q, want %d", host, path, token, a.code, a.body, code)
			}
			if check != nil {
				if err := check(a); err != nil {
					return fmt.Errorf("%s%s with token %q: %w", host, path, token, err)
				}
			}
			return nil
		}
	}
	body := func(s string) func(a authAnswer) error {
		return func(a authAnswer) error {
			if !strings.Contains(a.body, s) {
				return fmt.Errorf("body %q, want %q in it", a.body, s)
			}
			return nil
		}
	}
	g.eventually("the open Ingress serves", want("open.example.com", "/", "", 200, nil))
	g.eventually("the guarded Ingress asks", want("guarded.example.com", "/", "ok", 200, body("user=alice token=ok")))
	checkAll(t,
		want("guarded.example.com", "/", "no", 403, nil),
		want("guarded.example.com", "/", "", 401, func(a authAnswer) error {
			if a.challenge != `Bearer realm="test"` {
				return fmt.Errorf("WWW-Authenticate %q, want the auth server's", a.challenge)
			}
			return nil
		}),
		want("guarded.example.com", "/", "boom", 500, nil),
		want("signin.example.com", "/p?q=1", "", 302, func(a authAnswer) error {
			if w := "https://login.example.com/start?rd=http%3A%2F%2Fsignin.example.com%2Fp%3Fq%3D1"; a.loc != w {
				return fmt.Errorf("Location %q, want %q", a.loc, w)
			}
			return nil
		}),
		want("signin.example.com", "/", "ok", 200, body("user=mallory")), // no auth-response-headers: the client's own
		want("down.example.com", "/", "ok", 500, nil),
		want("svc.example.com", "/", "ok", 200, body("user=alice token=ok")),
		want("svc.example.com", "/", "no", 403, nil),
		want("svc.example.com", "/", "", 401, nil),
		want("otherns.example.com", "/", "ok", 200, body("user=alice token=ok")),
		want("otherns.example.com", "/", "", 401, nil),
		want("svctls.example.com", "/", "ok", 200, body("user=alice sni="+tlsName+" host="+tlsName+" token=ok")),
		want("svctls.example.com", "/", "no", 403, nil),
		want("svctls.example.com", "/", "", 401, nil),
	)
	checkAll(t,
		want("vars.example.com", "/p?page=2", "ok", 200, body("user=host=vars.example.com&rd=%2Fp%3Fpage%3D2&s=http&t=ok&p=2&u=/p&m=GET token=ok")),
		want(podAddrs[1], "/", "ok", 200, body("user=alice token=ok")), // $host: the auth server's address
		want(podAddrs[1], "/", "", 401, nil),
		want("oauth.example.com", "/p?q=1", "", 302, func(a authAnswer) error {
			if w := "https://oauth.example.com/oauth2/start?rd=%2Fp%3Fq%3D1"; a.loc != w {
				return fmt.Errorf("Location %q, want %q", a.loc, w)
			}
			return nil
		}),
		want("oauth.example.com", "/", "ok", 200, nil),
	)
	if o, _ := origin.Load().(string); o != "http://oauth.example.com/" { // the last request asked
		t.Errorf("the auth server's last X-Original-URL %q", o)
	}
	before := asked.Load()
	checkAll(t, want("open.example.com", "/", "", 200, body("user=mallory")), want("open.example.com", "/x", "no", 200, nil))
	if a := asked.Load(); a != before {
		t.Errorf("requests to an Ingress without auth-url asked the auth server %d times", a-before)
	}

	reloads := g.reloads()
	updateIngress(t, g.ing.Ingresses(ns), "open", func(mod *netv1.Ingress) { mod.Annotations = map[string]string{n + "auth-url": authURL} })
	g.eventually("auth-url added", want("open.example.com", "/", "", 401, nil))
	updateIngress(t, g.ing.Ingresses(ns), "open", func(mod *netv1.Ingress) {
		mod.Annotations = map[string]string{n + "auth-url": "http://" + podAddrs[1] + ":9000/deny"}
	})
	g.eventually("auth-url changed", want("open.example.com", "/", "ok", 403, nil))
	updateIngress(t, g.ing.Ingresses(ns), "open", func(mod *netv1.Ingress) { mod.Annotations = nil })
	g.eventually("auth-url removed", want("open.example.com", "/", "", 200, nil))
	if r := g.reloads(); r != reloads {
		t.Errorf("auth-url added, changed and removed reloaded HAProxy %d times, want 0", r-reloads)
	}

	updateIngress(t, g.ing.Ingresses(ns), "guarded", func(mod *netv1.Ingress) {
		mod.Annotations = map[string]string{n + "auth-url": "https://$hostname/oauth2/auth"}
	})
	g.eventually("an Event refuses the auth-url", g.ingressEvent("guarded", "Refused", "$hostname is not one of"))
	checkAll(t, want("guarded.example.com", "/", "ok", 200, body("user=alice")), want("guarded.example.com", "/", "", 401, nil))
}
