package dataplaneapi

import (
	"context"
	"fmt"
	"net/http"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/haproxy-k8s-sync/haproxy-k8s-sync/internal/dataplane"
	"github.com/haproxy-k8s-sync/haproxy-k8s-sync/internal/model"
	"github.com/haproxy-k8s-sync/haproxy-k8s-sync/internal/testing/lab"
)

// The Service backend's own check, written as the HAProxy driver renders
// it: an externalTrafficPolicy=Local Service with
// --local-check=health-check-node-port is checked with GET / on its
// healthCheckNodePort (default-server ... port P, option httpchk GET /,
// http-check expect status 200), beside a Service following its node.
// The API reads it back as written (a pass with nothing changed, and a new
// driver, write nothing); against the real API a node whose health port
// answers 503 (kube-proxy: no local endpoint) leaves the backend within
// the check's fall time, with no reload; a check changed is one
// configuration version and one reload.
func TestContractOwnCheck(t *testing.T) {
	for _, path := range []struct {
		name string
		raw  int
	}{{"transactions", -1}, {"raw", 1}} {
		t.Run(path.name, func(t *testing.T) {
			run(t, func(t *testing.T, a *api) { ownCheckContract(t, a, path.raw) })
		})
	}
}

// checkWorld is every-Service mode on two nodes: Service 0 checked by
// itself (check), Service 1 following its node (_nodes with the agent).
type checkWorld struct {
	trackWorld
	check model.Check
}

func (w *checkWorld) cfg() model.Config {
	own := *w.svcs[0]
	own.TrackNodes, own.Check, own.SendProxyV2 = !w.check.Enabled, w.check, true
	cfg := w.trackWorld.cfg()
	cfg.Backends[1] = &own
	return cfg
}

func ownCheckContract(t *testing.T, a *api, rawMin int) {
	ctx := context.Background()
	t.Cleanup(func() { a.deleteSection(t, dataplane.BackendPath(model.NodesBackend)) }) // last: after its followers
	nodes := []string{"127.81.14.1", "127.81.14.2"}
	// An interval of 1s or more: HAProxy 2.6 spreads the first checks
	// after a reload over the smallest interval of at least 1s among all
	// checks and agents, here the _nodes agent's hour, so checks at 200ms
	// would start only minutes later (measured: "Initializing" after 4 s).
	const inter, fall = time.Second, 2
	hc := [2]int{freeTCPPort(t), freeTCPPort(t)} // healthCheckNodePort, before and after a change
	health := map[string]*lab.HealthServer{}
	for _, n := range nodes {
		for _, p := range hc {
			h, err := lab.NewHealthServer(fmt.Sprintf("%s:%d", n, p))
			if err != nil {
				t.Skipf("health stand-in: %v", err)
			}
			t.Cleanup(h.Close)
			health[fmt.Sprintf("%s:%d", n, p)] = h
		}
	}
	w := &checkWorld{trackWorld: *newTrackWorld(t, a, uint16(freeTCPPort(t)), nodes...)}
	w.check = model.Check{Enabled: true, Inter: inter, Rise: 1, Fall: fall, Port: uint16(hc[0]), HTTP: model.HTTPCheck{Path: "/"}}
	own := w.svcs[0].Name

	d := a.driver(Options{RawMinWrites: rawMin})
	apply(t, d, w.cfg())
	wantOwnCheck(t, a, own, hc[0])
	if got := followers(t, a, w.svcs[1].Name); len(got) != 2 || got[nodes[0]] != nodes[0] {
		t.Errorf("%s follows %v, want its nodes", w.svcs[1].Name, got)
	}
	readBackUnchanged(t, a, d, w.cfg(), Options{RawMinWrites: rawMin})

	if a.srv == nil {
		r0 := a.reloads(t)
		addr := func(i int) string { return nodes[i] }
		waitOpState(t, a, own, addr(1), "up", 10*inter*fall)
		waitFullHealth(t, a, own, addr(1), 1+fall-1, 10*inter*fall)
		health[fmt.Sprintf("%s:%d", nodes[1], hc[0])].SetHealthy(false)
		took := waitOpState(t, a, own, addr(1), "down", 10*inter*fall)
		t.Logf("%s's server on %s down %v after its healthCheckNodePort answered 503 (inter %v, fall %d)", own, nodes[1], took, inter, fall)
		if s := opState(t, a, own, addr(0)); s != "up" {
			t.Errorf("the server on %s is %s, want up", nodes[0], s)
		}
		if res, err := d.Apply(ctx, w.cfg()); err != nil || res.Reloaded || res.Ops != 0 {
			t.Errorf("a pass while the check fails: ops %d reloaded %v err %v, want nothing to do", res.Ops, res.Reloaded, err)
		}
		health[fmt.Sprintf("%s:%d", nodes[1], hc[0])].SetHealthy(true)
		waitOpState(t, a, own, addr(1), "up", 10*inter*fall)
		if r := a.reloads(t); r != r0 {
			t.Errorf("%d reloads while the check failed and passed, want 0", r-r0)
		}
	}

	// The healthCheckNodePort changes: one configuration version, one reload.
	v0, r0 := a.version(t), a.reloads(t)
	w.check.Port = uint16(hc[1])
	if res, err := d.Apply(ctx, w.cfg()); err != nil || !res.Reloaded {
		t.Fatalf("the check's port changed: reloaded %v err %v, want one reload", res.Reloaded, err)
	}
	if v, r := a.version(t), a.reloads(t); v != v0+1 || r != r0+1 {
		t.Errorf("the check's port changed: %d versions and %d reloads, want 1 and 1", v-v0, r-r0)
	}
	wantOwnCheck(t, a, own, hc[1])
	readBackUnchanged(t, a, d, w.cfg(), Options{RawMinWrites: rawMin})
	if a.srv == nil {
		health[fmt.Sprintf("%s:%d", nodes[0], hc[1])].SetHealthy(false)
		waitOpState(t, a, own, nodes[0], "down", 10*inter*fall)
		if s := opState(t, a, own, nodes[1]); s != "up" {
			t.Errorf("the server on %s is %s, want up", nodes[1], s)
		}
	}

	// No check of its own any more: it follows its node, its unbound
	// slots carry no check (the node check is the agent here).
	w.check = model.Check{}
	if res, err := d.Apply(ctx, w.cfg()); err != nil || !res.Reloaded {
		t.Fatalf("the own check dropped: reloaded %v err %v", res.Reloaded, err)
	}
	base := fullBackend(t, a, own)
	for _, k := range []string{"adv_check", "httpchk_params", "http_check_list"} {
		if base[k] != nil {
			t.Errorf("%s: %s %v left", own, k, base[k])
		}
	}
	if ds := base["default_server"]; !same(ds, map[string]any{"send-proxy-v2": "enabled"}) {
		t.Errorf("%s: default_server %v, want only send-proxy-v2", own, ds)
	}
	readBackUnchanged(t, a, d, w.cfg(), Options{RawMinWrites: rawMin})
	apply(t, d, model.Config{})
}

// In single-Service mode the operator's backend is checked as the model
// says too: on the healthCheckNodePort with --local-check=
// health-check-node-port, or on the node check where its servers carry
// it; option httpchk replaces the older controller's option tcp-check
// while the check is an HTTP one, and tcp-check comes back with a check
// of the servers' own port.
func TestContractSeedOwnCheck(t *testing.T) {
	run(t, func(t *testing.T, a *api) {
		ctx := context.Background()
		be := a.seedBackend(t, "be_hks_seedchk")
		nodes := []string{"127.81.15.1", "127.81.15.2"}
		hc := freeTCPPort(t)
		var health []*lab.HealthServer
		for _, n := range nodes {
			h, err := lab.NewHealthServer(fmt.Sprintf("%s:%d", n, hc))
			if err != nil {
				t.Skipf("health stand-in: %v", err)
			}
			t.Cleanup(h.Close)
			health = append(health, h)
		}
		const inter, fall = time.Second, 2
		cfg := seedCfg(be, nodes[0]+":30443", nodes[1]+":30443")
		cfg.Backends[0].SendProxyV2 = true
		cfg.Backends[0].Check = model.Check{Enabled: true, Inter: inter, Rise: 1, Fall: fall, Port: uint16(hc), HTTP: model.HTTPCheck{Path: "/"}}
		d := a.driver(Options{Seed: be})
		apply(t, d, cfg)
		wantOwnCheck(t, a, be, hc)
		readBackUnchanged(t, a, d, cfg, Options{Seed: be})
		if a.srv == nil {
			waitFullHealth(t, a, be, nodes[1], 1+fall-1, 10*inter*fall)
			health[1].SetHealthy(false)
			t.Logf("the server on %s down %v after its check answered 503", nodes[1], waitOpState(t, a, be, nodes[1], "down", 10*inter*fall))
			if s := opState(t, a, be, nodes[0]); s != "up" {
				t.Errorf("the server on %s is %s, want up", nodes[0], s)
			}
		}

		// Back to the older controller's check: option tcp-check on the
		// servers' own port, with the PROXY header. One version, one reload.
		v0, r0 := a.version(t), a.reloads(t)
		tcp := *cfg.Backends[0]
		tcp.Check = model.Check{Enabled: true, Inter: inter, Rise: 1, Fall: fall}
		cfg.Backends = []*model.Backend{&tcp}
		if res, err := d.Apply(ctx, cfg); err != nil || !res.Reloaded {
			t.Fatalf("back to tcp-check: reloaded %v err %v", res.Reloaded, err)
		}
		if v, r := a.version(t), a.reloads(t); v != v0+1 || r != r0+1 {
			t.Errorf("back to tcp-check: %d versions and %d reloads, want 1 and 1", v-v0, r-r0)
		}
		base := fullBackend(t, a, be)
		wantDS := map[string]any{"check": "enabled", "inter": 1000, "rise": 1, "fall": 2, "send-proxy-v2": "enabled", "check-send-proxy": "enabled"}
		if base["adv_check"] != "tcp-check" || base["httpchk_params"] != nil || !same(base["default_server"], wantDS) {
			t.Errorf("back to tcp-check: adv_check %v httpchk_params %v default_server %v, want tcp-check and %v",
				base["adv_check"], base["httpchk_params"], base["default_server"], wantDS)
		}
		// The http-check rules stay as they were (tcp-check does not read
		// them): no write for them.
		if !same(base["http_check_list"], []any{map[string]any{"type": "expect", "match": "status", "pattern": "200"}}) {
			t.Errorf("back to tcp-check: http_check_list %v, want it left as it was", base["http_check_list"])
		}
		readBackUnchanged(t, a, d, cfg, Options{Seed: be})
	})
}

// wantOwnCheck checks the configuration of be: checked with GET / on
// port, without the PROXY header (a check of another port), its servers
// with no check or binding of their own; and the text the API wrote.
func wantOwnCheck(t *testing.T, a *api, be string, port int) {
	t.Helper()
	ctx := context.Background()
	base := fullBackend(t, a, be)
	wantDS := map[string]any{"check": "enabled", "inter": 1000, "rise": 1, "fall": 2, "health_check_port": port, "send-proxy-v2": "enabled"}
	if !same(base["default_server"], wantDS) {
		t.Errorf("%s: default_server %v, want %v", be, base["default_server"], wantDS)
	}
	if base["adv_check"] != "httpchk" || !same(base["httpchk_params"], map[string]any{"method": "GET", "uri": "/"}) ||
		!same(base["http_check_list"], []any{map[string]any{"type": "expect", "match": "status", "pattern": "200"}}) {
		t.Errorf("%s: adv_check %v httpchk_params %v http_check_list %v, want GET / expecting 200", be, base["adv_check"], base["httpchk_params"], base["http_check_list"])
	}
	srvs, _, err := a.c.List(ctx, dataplane.ServersPath(be), "")
	if err != nil {
		t.Fatal(err)
	}
	for _, s := range srvs {
		for _, k := range []string{"check", "track", "health_check_port", "inter"} {
			if s[k] != nil {
				t.Errorf("%s/%v: %s %v, want only the backend's check", be, s["name"], k, s[k])
			}
		}
	}
	text, _, err := a.c.RawConfig(ctx)
	if err != nil {
		t.Fatal(err)
	}
	sec := cfgSection(text, "backend "+be)
	for _, want := range []string{"option httpchk GET /\n", "http-check expect status 200\n", fmt.Sprintf(" port %d", port)} {
		if !strings.Contains(sec, want) {
			t.Errorf("%s as text lacks %q:\n%s", be, want, sec)
		}
	}
	if strings.Contains(sec, "check-send-proxy") {
		t.Errorf("%s: check-send-proxy on a check of another port:\n%s", be, sec)
	}
}

// fullBackend reads backend be with its rule lists (full_section).
func fullBackend(t *testing.T, a *api, be string) Object {
	t.Helper()
	var base Object
	if _, err := a.c.Do(context.Background(), http.MethodGet, dataplane.BackendPath(be), url.Values{"full_section": {"true"}}, nil, &base); err != nil {
		t.Fatal(err)
	}
	return base
}

// cfgSection is the section of haproxy.cfg text that starts with head.
func cfgSection(text, head string) string {
	var out strings.Builder
	in := false
	for _, l := range strings.SplitAfter(text, "\n") {
		trimmed := strings.TrimSpace(l)
		if l != "" && l[0] != ' ' && l[0] != '\t' && trimmed != "" {
			in = strings.HasPrefix(trimmed, head+" ") || trimmed == head
		}
		if in {
			out.WriteString(trimmed + "\n")
		}
	}
	return out.String()
}

// readBackUnchanged checks that what was written reads back as written:
// a pass with nothing changed and a new driver's first pass write
// nothing.
func readBackUnchanged(t *testing.T, a *api, d *Driver, cfg model.Config, opts Options) {
	t.Helper()
	v := a.version(t)
	for i, dr := range []*Driver{d, a.driver(opts)} {
		res, err := dr.Apply(context.Background(), cfg)
		if err != nil || res.Reloaded || res.Ops != 0 {
			t.Errorf("pass %d with nothing changed (%s): ops %d reloaded %v err %v, want nothing written", i, []string{"same driver", "new driver"}[i], res.Ops, res.Reloaded, err)
		}
	}
	if got := a.version(t); got != v {
		t.Errorf("passes with nothing changed wrote %d versions", got-v)
	}
}

// opState is HAProxy's operational state of the server at addr in be.
func opState(t *testing.T, a *api, be, addr string) string {
	t.Helper()
	rs, err := a.c.RuntimeServers(context.Background(), be)
	if err != nil {
		t.Fatal(err)
	}
	for _, r := range rs {
		if r["address"] == addr && r["admin_state"] == "ready" {
			return fmt.Sprint(r["operational_state"])
		}
	}
	return "absent"
}

// waitOpState polls until the server at addr in be is in state want, and
// returns how long that took; it fails the test after limit.
func waitOpState(t *testing.T, a *api, be, addr, want string, limit time.Duration) time.Duration {
	t.Helper()
	start := time.Now()
	for {
		got := opState(t, a, be, addr)
		if got == want {
			return time.Since(start)
		}
		if time.Since(start) > limit {
			rs, _ := a.c.RuntimeServers(context.Background(), be)
			text, _, _ := a.c.RawConfig(context.Background())
			t.Fatalf("%s: the server on %s is %s after %v, want %s; at runtime %v\n%s", be, addr, got, time.Since(start), want, rs, cfgSection(text, "backend "+be))
		}
		time.Sleep(20 * time.Millisecond) // poll interval, bounded by limit
	}
}

// waitFullHealth polls until HAProxy's check health of the server at addr
// in be is full (rise + fall - 1: as many checks passed as it takes), so
// that the time it then takes to go down is fall checks, not fewer.
func waitFullHealth(t *testing.T, a *api, be, addr string, full int64, limit time.Duration) {
	t.Helper()
	start := time.Now()
	for {
		rs, err := a.c.RuntimeServers(context.Background(), be)
		if err != nil {
			t.Fatal(err)
		}
		for _, r := range rs {
			if h, _ := toInt(r["check_health"]); r["address"] == addr && h == full {
				return
			}
		}
		if time.Since(start) > limit {
			t.Fatalf("%s: the server on %s never had full check health %d: %v", be, addr, full, rs)
		}
		time.Sleep(20 * time.Millisecond) // poll interval, bounded by limit
	}
}
