package e2e

import (
	"fmt"
	"net"
	"net/http"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	netv1 "k8s.io/api/networking/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/haproxy-k8s-sync/haproxy-k8s-sync/internal/ingress"
)

// protoPod is an HTTP server at ip:port answering "NAME host=HOST
// path=PATH proto=PROTO", over HTTP/1.1 or HTTP/2 in clear (prior
// knowledge); /slow answers after 5 s (or when the client goes).
func protoPod(t *testing.T, name, ip string, port int) {
	t.Helper()
	l, err := net.Listen("tcp", net.JoinHostPort(ip, fmt.Sprint(port)))
	if err != nil {
		t.Fatal(err)
	}
	srv := &http.Server{ReadHeaderTimeout: 5 * time.Second, Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/slow" {
			select {
			case <-time.After(5 * time.Second):
			case <-r.Context().Done():
				return
			}
		}
		fmt.Fprintf(w, "%s host=%s path=%s proto=%s", name, r.Host, r.URL.Path, r.Proto)
	})}
	srv.Protocols = new(http.Protocols)
	srv.Protocols.SetHTTP1(true)
	srv.Protocols.SetUnencryptedHTTP2(true)
	go func() { _ = srv.Serve(l) }()
	t.Cleanup(func() { _ = srv.Close() })
}

// ingressEvent is nil once Ingress name has a Warning Event reason whose
// message contains text.
func (g *gwEnv) ingressEvent(name, reason, text string) func() error {
	return func() error {
		evs, err := g.client.CoreV1().Events(ns).List(bg, metav1.ListOptions{FieldSelector: "involvedObject.name=" + name})
		if err != nil {
			return err
		}
		for _, e := range evs.Items {
			if e.Reason == reason && e.Type == corev1.EventTypeWarning && strings.Contains(e.Message, text) {
				return nil
			}
		}
		return fmt.Errorf("no %s Event naming %q among %d", reason, text, len(evs.Items))
	}
}

func implSpecific(p, svc string) netv1.HTTPIngressPath {
	x := prefix(p, svc)
	t := netv1.PathTypeImplementationSpecific
	x.PathType = &t
	return x
}

// TestIngressAnnotationsServed: the routing annotations of ingress-nginx
// and HAProxy Ingress on real HAProxy with real traffic, each as its
// documentation says: rewrite-target with use-regex's capture groups
// (/api(/|$)(.*) and /$2 send /api/users as /users), a whole-path
// rewrite-target, HAProxy Ingress's prefix rewrite-target, app-root
// (302), permanent-redirect with its code, temporal-redirect,
// from-to-www-redirect, proxy-read-timeout (504 after 1 s from a Pod
// that takes 5 s), backend-protocol GRPC (HTTP/2 in clear to the Pod).
// All of them added to a running controller: 0 reloads. Then a bad
// rewrite-target, and auth-type: basic without auth-secret (served open):
// an Event each, the last good version keeps serving.
func TestIngressAnnotationsServed(t *testing.T) {
	g, ok := newIngressEnv(t)
	if !ok {
		return
	}
	ing, httpPort, create := g.ing, g.httpPort, g.create
	protoPod(t, "web", podAddrs[0], 8080)
	protoPod(t, "h2", podAddrs[1], 8081)
	g.serviceOf("web", podAddrs[0], 8080)
	g.serviceOf("h2", podAddrs[1], 8081)
	n := ingress.NginxPrefix
	// The backends exist before the controller: a backend new to HAProxy
	// is structure (as for HTTPRoutes), the annotations are not.
	create(ingressOf("base", "base.example.com", nil, prefix("/", "web")))
	create(ingressOf("grpc", "grpc.example.com", map[string]string{n + "backend-protocol": "GRPC"}, prefix("/", "h2")))
	g.start(leaderFlags...)
	g.eventually("the base Ingress serves", answers(httpPort, false, "base.example.com", "/x", 200, "web host=base.example.com path=/x proto=HTTP/1.1"))
	g.eventually("backend-protocol GRPC: HTTP/2 in clear", answers(httpPort, false, "grpc.example.com", "/svc.Method", 200, "h2 host=grpc.example.com path=/svc.Method proto=HTTP/2.0"))
	before := g.reloads()

	create(ingressOf("regex", "regex.example.com", map[string]string{n + "use-regex": "true", n + "rewrite-target": "/$2"},
		implSpecific("/api(/|$)(.*)", "web")))
	create(ingressOf("whole", "whole.example.com", map[string]string{n + "rewrite-target": "/"}, prefix("/old", "web")))
	create(ingressOf("hap", "hap.example.com", map[string]string{ingress.HAProxyPrefix + "rewrite-target": "/v2"}, prefix("/app", "web")))
	create(ingressOf("root", "root.example.com", map[string]string{n + "app-root": "/app/home"}, prefix("/", "web")))
	create(ingressOf("moved", "moved.example.com", map[string]string{n + "permanent-redirect": "https://new.example.com/landing", n + "permanent-redirect-code": "308"}, prefix("/", "web")))
	create(ingressOf("temp", "temp.example.com", map[string]string{n + "temporal-redirect": "http://maintenance.example.com:8080/"}, prefix("/", "web")))
	create(ingressOf("www", "shop.example.com", map[string]string{n + "from-to-www-redirect": "true"}, prefix("/", "web")))
	create(ingressOf("slow", "slow.example.com", map[string]string{n + "proxy-read-timeout": "1"}, prefix("/", "web")))

	// The last one created is served: the informer saw the others first.
	g.eventually("the last Ingress serves", answers(httpPort, false, "slow.example.com", "/fast", 200, "web host=slow.example.com path=/fast "))
	if err := answers(httpPort, false, "regex.example.com", "/api/users", 200, "web host=regex.example.com path=/users ")(); err != nil {
		t.Errorf("use-regex and rewrite-target /$2: %v", err)
	}
	hostPort := fmt.Sprintf(":%d", httpPort)
	for _, c := range []struct {
		host, path string
		status     int
		want       string
	}{
		{"regex.example.com", "/api", 200, "web host=regex.example.com path=/ "},
		{"regex.example.com", "/api/a/b", 200, "web host=regex.example.com path=/a/b "},
		{"regex.example.com", "/apix", 404, ""},
		{"whole.example.com", "/old/page", 200, "web host=whole.example.com path=/ "},
		{"hap.example.com", "/app/x/y", 200, "web host=hap.example.com path=/v2/x/y "},
		{"root.example.com", "/", 302, "location=http://root.example.com" + hostPort + "/app/home"},
		{"root.example.com", "/app/home", 200, "web host=root.example.com path=/app/home "},
		{"moved.example.com", "/anything", 308, "location=https://new.example.com/landing"},
		{"temp.example.com", "/a", 302, "location=http://maintenance.example.com:8080/"},
		{"www.shop.example.com", "/p", 308, "location=http://shop.example.com" + hostPort + "/p"},
		{"shop.example.com", "/p", 200, "web host=shop.example.com path=/p "},
		{"slow.example.com", "/slow", 504, ""},
		{"slow.example.com", "/fast", 200, "web host=slow.example.com path=/fast "},
	} {
		if err := answers(httpPort, false, c.host, c.path, c.status, c.want)(); err != nil {
			t.Error(err)
		}
	}
	if r := g.reloads(); r != before {
		t.Errorf("eight Ingresses with routing annotations reloaded HAProxy %d times, want 0", r-before)
	}

	// A rewrite-target that names no capture group of the path: refused
	// with an Event; the last good version keeps serving.
	updateIngress(t, ing.Ingresses(ns), "regex", func(mod *netv1.Ingress) {
		mod.Annotations[n+"rewrite-target"] = "/$3"
	})
	g.eventually("an Event refuses the rewrite-target", g.ingressEvent("regex", "Refused", "rewrite-target"))
	if err := answers(httpPort, false, "regex.example.com", "/api/users", 200, "web host=regex.example.com path=/users ")(); err != nil {
		t.Errorf("the last good version of a refused Ingress: %v", err)
	}
	if err := answers(httpPort, false, "base.example.com", "/x", 200, "web ")(); err != nil {
		t.Errorf("another Ingress beside a refused one: %v", err)
	}

	// Authentication not served yet: refused, never served open. The
	// new path it brings is not served; the last good version is.
	updateIngress(t, ing.Ingresses(ns), "base", func(mod *netv1.Ingress) {
		mod.Annotations = map[string]string{n + "auth-type": "basic"}
		mod.Spec.Rules[0].HTTP.Paths = []netv1.HTTPIngressPath{exact("/admin", "h2")}
	})
	g.eventually("an Event refuses the authentication", g.ingressEvent("base", "Refused", "auth-type"))
	if err := answers(httpPort, false, "base.example.com", "/admin", 200, "web host=base.example.com path=/admin proto=HTTP/1.1")(); err != nil {
		t.Errorf("the last good version of an Ingress given authentication: %v", err)
	}
}
