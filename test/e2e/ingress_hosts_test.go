package e2e

import (
	"testing"

	netv1 "k8s.io/api/networking/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/haproxy-k8s-sync/haproxy-k8s-sync/internal/testing/lab"
)

// TestIngressWildcardOneLabel: an Ingress host "*.foo.com" takes exactly
// one DNS label before its suffix, as the Ingress spec says (and the
// ingress-controller-conformance host_rules feature checks): bar.foo.com
// is served, baz.bar.foo.com and foo.com are not (404), beside an exact
// host; a Gateway's wildcard keeps taking one label or more (render's
// "*." lookups, the HTTPRoute tests and the Gateway API suite). A
// wildcard added and one removed on a running controller: 0 reloads.
func TestIngressWildcardOneLabel(t *testing.T) {
	g, ok := newIngressEnv(t)
	if !ok {
		return
	}
	g.web("web", 0)
	g.web("exact", 1)
	g.create(ingressOf("wild", "*.foo.com", nil, prefix("/", "web")),
		ingressOf("exact", "foo.bar.com", nil, prefix("/", "exact")))
	g.start()
	port := g.httpPort
	g.eventually("the wildcard serves", answers(port, false, "bar.foo.com", "/", 200, "web host=bar.foo.com"))
	for _, c := range []struct {
		host   string
		status int
		want   string
	}{
		{"bar.foo.com", 200, "web "},
		{"BAR.foo.com", 200, "web "}, // host names are case-insensitive
		{"baz.bar.foo.com", 404, ""}, // two labels: not the wildcard's
		{"foo.com", 404, ""},         // no label
		{"foo.bar.com", 200, "exact "},
		{"subdomain.bar.com", 404, ""},
	} {
		if err := answers(port, false, c.host, "/", c.status, c.want)(); err != nil {
			t.Error(err)
		}
	}
	// A wildcard added to and one removed from a running controller: map
	// data (the one-label map), no reload (the backend stays in use: a
	// backend removed is structure).
	reloads := g.reloads()
	g.create(ingressOf("wild2", "*.baz.com", nil, prefix("/", "web")))
	g.eventually("a wildcard added", answers(port, false, "a.baz.com", "/", 200, "web "))
	if err := g.ing.Ingresses(ns).Delete(bg, "wild", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	g.eventually("a wildcard removed", answers(port, false, "bar.foo.com", "/", 404, ""))
	if err := answers(port, false, "b.a.baz.com", "/", 404, "")(); err != nil {
		t.Error(err)
	}
	if r := g.reloads(); r != reloads {
		t.Errorf("a wildcard host added and one removed reloaded HAProxy %d times, want 0", r-reloads)
	}
}

// TestIngressDefaultBackendServing: two Ingresses with a defaultBackend;
// the older serves every unmatched request while its backend has a
// server; once its endpoints are gone (its Pods deleted, as when its
// namespace is), the newer serves, with no 503 meanwhile for long
// (ingress-controller-conformance's default backend feature); back to
// the older when it has a server again.
func TestIngressDefaultBackendServing(t *testing.T) {
	g, ok := newIngressEnv(t)
	if !ok {
		return
	}
	g.web("old", 0)
	g.web("new", 1)
	class := "hks"
	fallback := func(name, svc string) *netv1.Ingress {
		return &netv1.Ingress{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns},
			Spec: netv1.IngressSpec{IngressClassName: &class, DefaultBackend: &netv1.IngressBackend{
				Service: &netv1.IngressServiceBackend{Name: svc, Port: netv1.ServiceBackendPort{Number: 80}}}}}
	}
	// The same second at most: the older by name on ties ("a-" < "b-").
	g.create(fallback("a-old", "old"), fallback("b-new", "new"))
	g.start()
	port := g.httpPort
	g.eventually("the oldest's default backend", answers(port, false, "unmatched.example.com", "/x", 200, "old "))
	if err := lab.ApplySlice(bg, g.client, lab.SliceFor(ns, "old", 8080, nil)); err != nil {
		t.Fatal(err)
	}
	g.eventually("the next one's once the oldest has no server", answers(port, false, "unmatched.example.com", "/x", 200, "new "))
	if err := lab.ApplySlice(bg, g.client, lab.SliceFor(ns, "old", 8080, []lab.Endpoint{{IP: podAddrs[0], Node: "n1", Ready: true}})); err != nil {
		t.Fatal(err)
	}
	g.eventually("the oldest's again", answers(port, false, "unmatched.example.com", "/x", 200, "old "))
}
