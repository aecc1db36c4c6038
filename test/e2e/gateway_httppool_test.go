package e2e

import (
	"fmt"
	"io"
	"net"
	"net/http"
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/util/retry"
	gwv1 "sigs.k8s.io/gateway-api/apis/v1"

	"github.com/haproxy-k8s-sync/haproxy-k8s-sync/internal/gateway"
	"github.com/haproxy-k8s-sync/haproxy-k8s-sync/internal/haproxy/haproxytest"
	"github.com/haproxy-k8s-sync/haproxy-k8s-sync/internal/testing/gwcrd"
)

// httpPod is a Service name whose one endpoint is an HTTP server at
// 198.51.100.i:port (the test's own network namespace) answering every
// request with the Pod's name.
func (g *gwEnv) httpPod(name string, i int, port int32) {
	g.t.Helper()
	ip := fmt.Sprintf("198.51.100.%d", i)
	ln, err := net.Listen("tcp", fmt.Sprintf("%s:%d", ip, port))
	if err != nil {
		g.t.Fatal(err)
	}
	srv := &http.Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) { _, _ = io.WriteString(w, name) }),
		ReadHeaderTimeout: 5 * time.Second}
	go func() { _ = srv.Serve(ln) }()
	g.t.Cleanup(func() { _ = srv.Close() })
	g.serviceOf(name, ip, port)
}

// httpRoute creates HTTPRoute name on the listener section of Gateway gw
// for hostname host, every path to refs.
func (g *gwEnv) httpRoute(name, section, host string, refs ...gwv1.BackendRef) {
	g.t.Helper()
	var hrefs []gwv1.HTTPBackendRef
	for _, r := range refs {
		hrefs = append(hrefs, gwv1.HTTPBackendRef{BackendRef: r})
	}
	_, err := g.gw.GatewayV1().HTTPRoutes(ns).Create(bg, &gwv1.HTTPRoute{ObjectMeta: metav1.ObjectMeta{Name: name},
		Spec: gwv1.HTTPRouteSpec{CommonRouteSpec: gwv1.CommonRouteSpec{ParentRefs: parentRef(section)},
			Hostnames: []gwv1.Hostname{gwv1.Hostname(host)}, Rules: []gwv1.HTTPRouteRule{{BackendRefs: hrefs}}}},
		metav1.CreateOptions{})
	if err != nil {
		g.t.Fatal(err)
	}
}

// setHTTPBackendRefs replaces the backendRefs of HTTPRoute name's rule.
func (g *gwEnv) setHTTPBackendRefs(name string, refs ...gwv1.BackendRef) {
	g.t.Helper()
	err := retry.RetryOnConflict(retry.DefaultRetry, func() error {
		rt, err := g.gw.GatewayV1().HTTPRoutes(ns).Get(bg, name, metav1.GetOptions{})
		if err != nil {
			return err
		}
		rt.Spec.Rules[0].BackendRefs = nil
		for _, r := range refs {
			rt.Spec.Rules[0].BackendRefs = append(rt.Spec.Rules[0].BackendRefs, gwv1.HTTPBackendRef{BackendRef: r})
		}
		_, err = g.gw.GatewayV1().HTTPRoutes(ns).Update(bg, rt, metav1.UpdateOptions{})
		return err
	})
	if err != nil {
		g.t.Fatal(err)
	}
}

// answersHTTP is nil once every request for host through port is
// answered 200 by one of the Pods named in want, and each of them
// answered.
func answersHTTP(port int, host string, want ...string) func() error {
	return func() error {
		c := &http.Client{Timeout: 2 * time.Second, Transport: &http.Transport{DisableKeepAlives: true}}
		seen := map[string]bool{}
		for range 3*len(want) + 2 {
			req, err := http.NewRequest(http.MethodGet, fmt.Sprintf("http://%s:%d/", serviceIP(), port), nil)
			if err != nil {
				return err
			}
			req.Host = host
			resp, err := c.Do(req)
			if err != nil {
				return err
			}
			body, _ := io.ReadAll(resp.Body)
			resp.Body.Close()
			if resp.StatusCode != http.StatusOK || !strings.Contains(strings.Join(want, " "), string(body)) || len(body) == 0 {
				return fmt.Errorf("%s: %d %q, want 200 from %v", host, resp.StatusCode, body, want)
			}
			seen[string(body)] = true
		}
		if len(seen) != len(want) {
			return fmt.Errorf("%s: answered by %v, want %v", host, seen, want)
		}
		return nil
	}
}

// With --backend-pool in the gateway mode, an HTTPRoute to a Service no
// route used before is map data: the Service's backend takes a spare of
// the HTTP class through the Runtime API, the HTTP maps name the spare,
// 0 reloads, and the requests reach the new Service's Pod; a route moved
// to another new Service gives the old one's spare back.
func TestGatewayHTTPBackendFromPool(t *testing.T) {
	if !inNetns(t, podAddrs...) {
		return
	}
	e := newEnv(t)
	gwcrd.InstallAll(t, e.kube.Config) // HTTPRoute's CRD too
	g := newGatewayEnvOn(t, e)
	port := haproxytest.FreePort(t)
	g.httpPod("web-a", 1, 8080)
	g.createGateway("gw", listener("http", gwv1.HTTPProtocolType, port, ""))
	g.httpRoute("a", "http", "a.example.com", backendRef("web-a", 1))
	g.startController("--mode=gateway", "--backend-pool=4")
	g.eventually("route accepted", g.routeAccepted(gateway.KindHTTPRoute, "a"))
	g.eventually("a served by web-a", answersHTTP(port, "a.example.com", "web-a"))
	if err := readyForNewBackends(g.config()); err != nil { // dynamic_test.go
		t.Fatalf("no spare backends: %v", err)
	}
	before := g.reloads()

	// Services no route used before: a new route to one, a route moved
	// to another, a route split between two.
	g.httpPod("web-b", 2, 8080)
	g.httpPod("web-c", 3, 8080)
	g.httpRoute("b", "http", "b.example.com", backendRef("web-b", 1))
	g.eventually("b served by web-b", answersHTTP(port, "b.example.com", "web-b"))
	g.setHTTPBackendRefs("a", backendRef("web-c", 1))
	g.eventually("a served by web-c", answersHTTP(port, "a.example.com", "web-c"))
	g.setHTTPBackendRefs("a", backendRef("web-a", 1), backendRef("web-c", 1))
	g.eventually("a served by web-a and web-c", answersHTTP(port, "a.example.com", "web-a", "web-c"))
	g.eventually("b still served by web-b", answersHTTP(port, "b.example.com", "web-b"))
	if r := g.reloads(); r != before {
		t.Errorf("HTTPRoutes to new Services reloaded HAProxy %d times, want 0", r-before)
	}
}
