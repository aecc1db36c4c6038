package runtimeapi

import (
	"context"
	"fmt"
	"net/http"
	"net/netip"
	"sync/atomic"
	"testing"
	"time"

	"github.com/haproxy-k8s-sync/haproxy-k8s-sync/internal/haproxy/haproxytest"
	"github.com/haproxy-k8s-sync/haproxy-k8s-sync/internal/model"
)

// TestHTTPRetryToAnotherEndpoint: a rule's retry policy on a real
// HAProxy with real requests. Of a backend's two servers one answers
// 500 to everything: through the plain backend about half the requests
// fail; through its retrying twin (retry-on 500, retries 1: the one
// retry is the last, which the defaults' option redispatch sends to
// another server) every request succeeds, the failing server having
// seen its share; so is every connection closed without an answer and
// every answer later than the rule's timeout. A 503 is not in the
// policy: not retried. Moving the
// rule between the twin and the plain backend is map data: no reload.
func TestHTTPRetryToAnotherEndpoint(t *testing.T) {
	l := startMapLab(t)
	d := l.d
	ctx := context.Background()

	var bad, good atomic.Int64
	failing := serveHTTP(t, func(w http.ResponseWriter, r *http.Request) {
		bad.Add(1)
		switch r.URL.Path {
		case "/close": // a connection closed without an answer
			if c, _, err := http.NewResponseController(w).Hijack(); err == nil {
				c.Close()
			}
			return
		case "/slow": // past the rule's timeout
			time.Sleep(2 * time.Second)
		}
		if r.URL.Path == "/unavailable" {
			w.WriteHeader(503)
			return
		}
		w.WriteHeader(500)
	})
	healthy := serveHTTP(t, func(w http.ResponseWriter, r *http.Request) {
		good.Add(1)
		if r.URL.Path == "/unavailable" {
			w.WriteHeader(503)
			return
		}
		fmt.Fprint(w, "ok")
	})
	port := uint16(haproxytest.FreePort(t))
	addr := fmt.Sprintf("127.0.0.1:%d", port)
	servers := []model.Server{{Addr: failing.Addr(), Port: failing.Port()}, {Addr: healthy.Addr(), Port: healthy.Port()}}
	if servers[1].Port < servers[0].Port { // sorted by address, then port
		servers[0], servers[1] = servers[1], servers[0]
	}
	plain := &model.Backend{Name: "gwh_a", Service: "apps/a", Balance: "roundrobin", HTTP: true, Servers: servers}
	twin := *plain
	twin.Name, twin.RetryOn, twin.Retries = "gwh_a_r1-500", "conn-failure empty-response response-timeout 500", 1
	cfgOf := func(backend string) model.Config {
		h := model.Shaped(&model.HTTP{Port: 80, Hosts: []model.HTTPHost{{Name: model.AnyHost, Rules: []model.HTTPRule{
			{PathType: model.PathPrefix, Path: "/slow", Action: 1}, {PathType: model.PathPrefix, Path: "/", Action: 0}}}},
			Actions: []model.HTTPAction{{Backends: one(backend)}, {Backends: one(backend), Ext: &model.HTTPActionExt{Timeout: 500 * time.Millisecond}}}})
		return model.Config{
			Frontends: []model.Frontend{{Name: "gw_apps_gw_80", Service: "apps/gw", Binds: []model.Bind{{Addr: netip.MustParseAddr("127.0.0.1"), Port: port}}, HTTP: h}},
			Backends:  []*model.Backend{plain, &twin},
		}
	}
	send := func(path string, n int) map[int]int {
		t.Helper()
		got := map[int]int{}
		for range n {
			status, _ := httpGet(t, addr, "a.example.com", path)
			got[status]++
		}
		return got
	}
	if _, err := d.Apply(ctx, cfgOf("gwh_a")); err != nil {
		t.Fatal(err)
	}
	if got := send("/", 20); got[500] < 5 || got[200] < 5 {
		t.Fatalf("plain backend: %v, want about half 500", got)
	}
	if got := send("/close", 10); got[502] < 3 {
		t.Fatalf("plain backend, a connection closed: %v, want about half 502", got)
	}
	reloads := l.reloads(ctx, t)
	if _, err := d.Apply(ctx, cfgOf("gwh_a_r1-500")); err != nil {
		t.Fatal(err)
	}
	bad0, good0 := bad.Load(), good.Load()
	if got := send("/", 20); got[200] != 20 {
		t.Errorf("retrying backend: %v, want 20 200s", got)
	}
	if b, g := bad.Load()-bad0, good.Load()-good0; b < 5 || g != 20 {
		t.Errorf("retrying backend: the failing server saw %d requests, the healthy one %d; want >= 5 and 20 (every retry to the other)", b, g)
	}
	// A connection closed without an answer (HTTPRouteRetryConnectionError)
	// and the rule's timeout firing (HTTPRouteRetryBackendTimeout) are
	// retried too.
	if got := send("/close", 10); got[200] != 10 {
		t.Errorf("retrying backend, a connection closed: %v, want 10 200s", got)
	}
	if got := send("/slow", 6); got[200] != 6 {
		t.Errorf("retrying backend, the timeout fired: %v, want 6 200s", got)
	}
	seen0 := bad.Load() + good.Load()
	if got := send("/unavailable", 10); got[503] != 10 {
		t.Errorf("503, not in the policy: %v, want 10 503s", got)
	}
	if n := bad.Load() + good.Load() - seen0; n != 10 {
		t.Errorf("503, not in the policy: the servers saw %d requests for 10, want 10 (no retry)", n)
	}
	if _, err := d.Apply(ctx, cfgOf("gwh_a")); err != nil {
		t.Fatal(err)
	}
	if got := send("/", 20); got[500] < 5 {
		t.Errorf("back to the plain backend: %v, want about half 500", got)
	}
	if got := l.reloads(ctx, t); got != reloads {
		t.Errorf("%d reloads for a rule moved between its backends, want 0", got-reloads)
	}
}
