package e2e

import (
	"fmt"
	"net/http"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/haproxy-k8s-sync/haproxy-k8s-sync/internal/ingress"
)

// responseHeader is nil once GET / on host answers 200 with header name
// equal to want ("": absent).
func responseHeader(port int, host, name, want string) func() error {
	return func() error {
		c := &http.Client{Transport: &http.Transport{DisableKeepAlives: true}, Timeout: 3 * time.Second}
		code, h, err := headersOf(c, http.MethodGet, fmt.Sprintf("http://%s:%d/", serviceIP(), port), host, nil)
		if err != nil {
			return err
		}
		if got := h.Get(name); code != 200 || got != want {
			return fmt.Errorf("%s: %d, %s %q, want 200 %q", host, code, name, got, want)
		}
		return nil
	}
}

// setConfigMapKey sets key of ConfigMap name to v.
func (g *gwEnv) setConfigMapKey(name, key, v string) {
	g.t.Helper()
	cms := g.client.CoreV1().ConfigMaps(ns)
	cur, err := cms.Get(bg, name, metav1.GetOptions{})
	if err != nil {
		g.t.Fatal(err)
	}
	cur.Data[key] = v
	if _, err := cms.Update(bg, cur, metav1.UpdateOptions{}); err != nil {
		g.t.Fatal(err)
	}
}

// TestIngressCustomHeaders: ingress-nginx's custom-headers on real
// HAProxy: the ConfigMap's headers reach the client, values with spaces,
// ';' and quotes exactly (HSTS, CSP); a value changed in the ConfigMap
// is served with 0 reloads; a value that would inject a
// map separator is refused with an Event and the last valid value kept.
func TestIngressCustomHeaders(t *testing.T) {
	g, ok := newIngressEnv(t)
	if !ok {
		return
	}
	const hsts, csp = "max-age=31536000; includeSubDomains", `default-src 'self'; img-src "data:"`
	g.web("web", 0)
	cms := g.client.CoreV1().ConfigMaps(ns)
	cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "hdrs"}, Data: map[string]string{"X-Frame-Options": "DENY", "X-Team": "one",
		"Strict-Transport-Security": hsts, "Content-Security-Policy": csp}}
	if _, err := cms.Create(bg, cm, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	g.create(ingressOf("base", "base.example.com", nil, prefix("/", "web")))
	g.create(ingressOf("hdrs", "hdrs.example.com", map[string]string{ingress.NginxPrefix + "custom-headers": "hdrs"}, prefix("/", "web")))
	g.start(leaderFlags...)
	g.eventually("the headers reach the client", responseHeader(g.httpPort, "hdrs.example.com", "X-Team", "one"))
	for n, v := range map[string]string{"X-Frame-Options": "DENY", "Strict-Transport-Security": hsts, "Content-Security-Policy": csp} {
		if err := responseHeader(g.httpPort, "hdrs.example.com", n, v)(); err != nil {
			t.Error(err)
		}
	}
	if err := responseHeader(g.httpPort, "base.example.com", "X-Team", "")(); err != nil {
		t.Errorf("an Ingress without custom-headers: %v", err)
	}
	before := g.reloads()
	update := func(v string) { t.Helper(); g.setConfigMapKey("hdrs", "X-Team", v) }
	const two = "two;  'spaced' value" // through the Runtime API
	update(two)
	g.eventually("the new value reaches the client", responseHeader(g.httpPort, "hdrs.example.com", "X-Team", two))
	if r := g.reloads(); r != before {
		t.Errorf("a header value changed reloaded HAProxy %d times, want 0", r-before)
	}
	update("a|b")
	g.eventually("the bad value has an Event", g.ingressEvent("hdrs", "InvalidCustomHeaders", "hdrs"))
	if err := responseHeader(g.httpPort, "hdrs.example.com", "X-Team", two)(); err != nil {
		t.Errorf("the last valid value: %v", err)
	}
	if r := g.reloads(); r != before {
		t.Errorf("a bad header value reloaded HAProxy %d times, want 0", r-before)
	}
}

// TestIngressGlobalHeaders: --ingress-proxy-set-headers and
// --ingress-add-headers (ingress-nginx's proxy-set-headers and
// add-headers) on real HAProxy: the request headers reach the Pod and
// the response headers the client, on every Ingress; a value changed is
// served with 0 reloads; a bad value is an Event on the ConfigMap and
// the last valid value stays.
func TestIngressGlobalHeaders(t *testing.T) {
	g, ok := newIngressEnv(t)
	if !ok {
		return
	}
	const hsts = "max-age=31536000; includeSubDomains"
	// The Pod answers the request header X-Using it got as X-Got-Using.
	g.serve("web", 0, func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("X-Got-Using", r.Header.Get("X-Using"))
		fmt.Fprint(w, "web")
	})
	cms := g.client.CoreV1().ConfigMaps(ns)
	for name, data := range map[string]map[string]string{"set": {"X-Using": "haproxy; k8s 'sync'"}, "add": {"Strict-Transport-Security": hsts}} {
		if _, err := cms.Create(bg, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: name}, Data: data}, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	g.create(ingressOf("a", "a.example.com", nil, prefix("/", "web")), ingressOf("b", "b.example.com", nil, prefix("/", "web")))
	g.start(append(leaderFlags, "--ingress-proxy-set-headers="+ns+"/set", "--ingress-add-headers="+ns+"/add")...)
	g.eventually("the request header reaches the Pod", responseHeader(g.httpPort, "a.example.com", "X-Got-Using", "haproxy; k8s 'sync'"))
	for _, host := range []string{"a.example.com", "b.example.com"} {
		if err := responseHeader(g.httpPort, host, "Strict-Transport-Security", hsts)(); err != nil {
			t.Error(err)
		}
	}
	before := g.reloads()
	update := func(v string) { t.Helper(); g.setConfigMapKey("set", "X-Using", v) }
	update("two;  2")
	g.eventually("the new value reaches the Pod", responseHeader(g.httpPort, "b.example.com", "X-Got-Using", "two;  2"))
	if r := g.reloads(); r != before {
		t.Errorf("a header value changed reloaded HAProxy %d times, want 0", r-before)
	}
	update("a|b")
	g.eventually("the bad value has an Event on the ConfigMap", g.ingressEvent("set", ingress.InvalidGlobalHeaders, `"X-Using"`))
	if err := responseHeader(g.httpPort, "a.example.com", "X-Got-Using", "two;  2")(); err != nil {
		t.Errorf("the last valid value: %v", err)
	}
	if r := g.reloads(); r != before {
		t.Errorf("a bad header value reloaded HAProxy %d times, want 0", r-before)
	}
}
