package runtimeapi

import (
	"context"
	"crypto/tls"
	"fmt"
	"io"
	"net"
	"net/netip"
	"strings"
	"testing"
	"time"

	"github.com/haproxy-k8s-sync/haproxy-k8s-sync/internal/haproxy/haproxytest"
	"github.com/haproxy-k8s-sync/haproxy-k8s-sync/internal/model"
	"github.com/haproxy-k8s-sync/haproxy-k8s-sync/internal/testing/lab"
	"github.com/haproxy-k8s-sync/haproxy-k8s-sync/internal/testing/testcert"
)

// TestTLSTerminateRoutesWithoutReload: a frontend that terminates TLS
// and routes by server name (a TLS Terminate listener) sends each name's
// decrypted stream to its route's plain-TCP backend; routes added, moved
// to another backend and removed, a wildcard and a route for any name,
// all with no reload (render/tlsroutemaps.go).
func TestTLSTerminateRoutesWithoutReload(t *testing.T) {
	l := startLab(t)
	ctx := context.Background()
	if l.d.opts.Render.ACLDir == "" || l.d.opts.Render.CertDir == "" {
		t.Fatalf("no map or certificate directory beside %s", l.cfgPath)
	}
	w := newTLSWorld(t) // the certificates
	_, cert := w.issue(testcert.ECDSA, "a.example", "*.a.example", "c.example", "x.example")
	fePort := uint16(haproxytest.FreePort(t))
	backends := []*model.Backend{}
	for _, n := range []string{"node-a", "node-b"} {
		port := haproxytest.FreePort(t)
		node := lab.NewNodeServer(n, "127.0.0.1")
		if err := node.Listen(port); err != nil {
			t.Skipf("node stand-in: %v", err)
		}
		t.Cleanup(node.Close)
		backends = append(backends, &model.Backend{Name: "be_" + n, Service: "default/" + n, Balance: "roundrobin",
			Servers: []model.Server{{Addr: netip.MustParseAddr("127.0.0.1"), Port: uint16(port)}}})
	}
	config := func(routes ...model.Route) model.Config {
		return model.Config{
			Frontends: []model.Frontend{{Name: "gw_default_gw_8443", Service: "default/gw",
				Binds:  []model.Bind{{Addr: netip.MustParseAddr("127.0.0.1"), Port: fePort}},
				TLS:    &model.TLS{Certificates: []model.Certificate{cert}, Default: cert.Name},
				Routes: routes}},
			Backends: backends,
		}
	}
	to := func(sni, be string) model.Route {
		return model.Route{SNI: sni, Backends: []model.WeightedBackend{{Name: "be_" + be, Weight: 1}}}
	}
	// answer is the node behind for a TLS client naming sni ("" for a
	// refused connection).
	answer := func(sni string) (string, error) {
		d := &net.Dialer{Timeout: 2 * time.Second}
		c, err := tls.DialWithDialer(d, "tcp", fmt.Sprintf("127.0.0.1:%d", fePort), &tls.Config{ServerName: sni, InsecureSkipVerify: true})
		if err != nil {
			return "", err
		}
		defer c.Close()
		_ = c.SetDeadline(time.Now().Add(3 * time.Second))
		got, err := io.ReadAll(c)
		return strings.TrimSpace(string(got)), err
	}
	expect := func(step string, want map[string]string) {
		t.Helper()
		for sni, node := range want {
			got, err := answer(sni)
			if got != node {
				t.Fatalf("%s: a client naming %q reached %q (%v), want %q", step, sni, got, err, node)
			}
		}
	}

	if _, err := l.d.Apply(ctx, config(to("a.example", "node-a"), to("*.a.example", "node-b"))); err != nil {
		t.Fatal(err)
	}
	base := l.reloads(ctx, t)
	expect("first", map[string]string{"a.example": "node-a", "x.a.example": "node-b", "y.z.a.example": "node-b", "c.example": ""})

	for _, step := range []struct {
		name   string
		routes []model.Route
		want   map[string]string
	}{
		{"a route added", []model.Route{to("a.example", "node-a"), to("c.example", "node-b"), to("*.a.example", "node-b")},
			map[string]string{"a.example": "node-a", "c.example": "node-b", "x.a.example": "node-b"}},
		{"a route moved", []model.Route{to("a.example", "node-b"), to("c.example", "node-b"), to("*.a.example", "node-a")},
			map[string]string{"a.example": "node-b", "c.example": "node-b", "x.a.example": "node-a"}},
		{"a route for any name", []model.Route{to("a.example", "node-b"), to("", "node-a")},
			map[string]string{"a.example": "node-b", "c.example": "node-a", "x.example": "node-a", "x.a.example": "node-a"}},
		{"routes removed", []model.Route{to("c.example", "node-a")},
			map[string]string{"c.example": "node-a", "a.example": "", "x.example": ""}},
	} {
		if _, err := l.d.Apply(ctx, config(step.routes...)); err != nil {
			t.Fatalf("%s: %v", step.name, err)
		}
		expect(step.name, step.want)
	}
	if got := l.reloads(ctx, t); got != base {
		t.Fatalf("%d reloads for route changes", got-base)
	}
}
