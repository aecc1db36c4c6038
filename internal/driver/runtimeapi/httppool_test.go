package runtimeapi

import (
	"context"
	"fmt"
	"net/netip"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/haproxy-k8s-sync/haproxy-k8s-sync/internal/haproxy/haproxytest"
	"github.com/haproxy-k8s-sync/haproxy-k8s-sync/internal/model"
	"github.com/haproxy-k8s-sync/haproxy-k8s-sync/internal/spares"
)

// TestHTTPPoolServesNewBackendsWithoutReload: with a pool, an HTTP
// route to a backend no route used before takes a spare of the HTTP
// class with no reload (the HTTP maps, written from spares.View, name
// the spare), and its requests reach that backend's server only; a
// backend no route names any more gives its spare back, and the next
// new one takes it, again with no reload. Without the view renaming the
// HTTP table's backends, each new backend was a reload.
func TestHTTPPoolServesNewBackendsWithoutReload(t *testing.T) {
	l := startLabWith(t, func(o *Options) {
		o.Render.ACLDir = filepath.Join(filepath.Dir(o.ConfigPath), "acl")
		o.Pool = spares.Policy{Spares: 2, Other: 1, LowWater: 1}
		o.ReloadSettle = 0
	})
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	servers := map[string]netip.AddrPort{}
	for _, n := range []string{"A", "B", "C"} {
		servers[n] = httpBackend(t, n)
	}
	port := uint16(haproxytest.FreePort(t))
	addr := fmt.Sprintf("127.0.0.1:%d", port)
	// cfgOf: host "<x>.example.com" goes to backend gwh_<x>, served by
	// server X, for each x named.
	cfgOf := func(names ...string) model.Config {
		h := &model.HTTP{Port: 80}
		cfg := model.Config{Frontends: []model.Frontend{{Name: "gw_apps_gw_80", Service: "apps/gw",
			Binds: []model.Bind{{Addr: netip.MustParseAddr("127.0.0.1"), Port: port}}, HTTP: h}}}
		for i, n := range names {
			be := "gwh_" + strings.ToLower(n)
			h.Hosts = append(h.Hosts, model.HTTPHost{Name: strings.ToLower(n) + ".example.com",
				Rules: []model.HTTPRule{{PathType: model.PathPrefix, Path: "/", Action: i}}})
			h.Actions = append(h.Actions, model.HTTPAction{Backends: []model.WeightedBackend{{Name: be, Weight: 1}}})
			s := servers[n]
			cfg.Backends = append(cfg.Backends, &model.Backend{Name: be, Service: "apps/" + be, Balance: "roundrobin", HTTP: true,
				Servers: []model.Server{{Addr: s.Addr(), Port: s.Port()}}})
		}
		model.Shaped(h)
		return cfg
	}
	served := func(step string, want map[string]string) {
		t.Helper()
		for host, body := range want {
			for range 3 {
				status, got := httpGet(t, addr, host, "/")
				if status != 200 || !strings.HasPrefix(got, body) {
					t.Fatalf("%s: GET %s: %d %q, want 200 from %s", step, host, status, got, body)
				}
			}
		}
	}
	if _, err := l.d.Apply(ctx, cfgOf("A")); err != nil {
		t.Fatal(err)
	}
	served("start", map[string]string{"a.example.com": "A"})
	if sp := l.d.HAProxyBackend("gwh_a"); !strings.HasPrefix(sp, spares.Prefix) {
		t.Fatalf("gwh_a is in %q, want a spare", sp)
	}
	noReload := l.noReload(ctx, t)

	noReload("a route to a new backend", cfgOf("A", "B"))
	served("B added", map[string]string{"a.example.com": "A", "b.example.com": "B"})
	spareA, spareB := l.d.HAProxyBackend("gwh_a"), l.d.HAProxyBackend("gwh_b")
	if !strings.HasPrefix(spareB, spares.Prefix) || spareB == spareA {
		t.Fatalf("gwh_b is in %q (gwh_a in %q): want a spare of its own", spareB, spareA)
	}

	// A leaves, C comes: C may not take A's spare in the pass that
	// cleans it, so it takes another free one; then A's is free again.
	noReload("a backend gone, another new", cfgOf("B", "C"))
	served("C replaces A", map[string]string{"b.example.com": "B", "c.example.com": "C"})
	if status, _ := httpGet(t, addr, "a.example.com", "/"); status != 404 {
		t.Errorf("a.example.com after its route went: %d, want 404", status)
	}
}

// noReload returns a function that applies a model and fails the test
// (named by step) when the pass reloaded or HAProxy's reload count moved
// since noReload was called.
func (l *testLab) noReload(ctx context.Context, t *testing.T) func(step string, cfg model.Config) {
	reloads := l.reloads(ctx, t)
	return func(step string, cfg model.Config) {
		t.Helper()
		res, err := l.d.Apply(ctx, cfg)
		if err != nil || res.Reloaded {
			t.Fatalf("%s: reloaded %v (%v), %v; want no reload", step, res.Reloaded, res.Reasons, err)
		}
		if n := l.reloads(ctx, t); n != reloads {
			t.Fatalf("%s: HAProxy reloaded %d times", step, n-reloads)
		}
	}
}
