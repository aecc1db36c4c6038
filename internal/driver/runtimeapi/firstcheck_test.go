package runtimeapi

import (
	"context"
	"net/netip"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/haproxy-k8s-sync/haproxy-k8s-sync/internal/haproxy"
	"github.com/haproxy-k8s-sync/haproxy-k8s-sync/internal/haproxy/haproxytest"
	"github.com/haproxy-k8s-sync/haproxy-k8s-sync/internal/model"
	"github.com/haproxy-k8s-sync/haproxy-k8s-sync/internal/plan"
	"github.com/haproxy-k8s-sync/haproxy-k8s-sync/internal/render"
	"github.com/haproxy-k8s-sync/haproxy-k8s-sync/internal/testing/lab"
)

// With no node check (--node-check=none), the servers of a Service checked
// faster than once a second leave service within about a second of their
// check failing after a start and after a reload, as between reloads.
// HAProxy spreads the first run of every check over the smallest interval
// of at least a second among all checks and agents; with the _nodes
// agent's hour as that interval, those servers stayed UP ("Initializing")
// for minutes after each reload (model.Config.NodesAgentInter; measured
// here: two of three still UP 15 minutes after a start). The agent
// that fails meanwhile (nothing listens on its port) never takes a node's
// server down.
func TestFastCheckFirstRun(t *testing.T) {
	const inter, fall = 200 * time.Millisecond, 2
	// The first run within the agent's second, then fall checks, plus room
	// for a loaded machine.
	bound := model.AgentInterFast + fall*inter + 2*time.Second
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()

	live := lab.NewNodeServer("live", "127.0.0.1")
	t.Cleanup(live.Close)
	var livePorts, deadPorts, newPorts []uint16
	for range 3 {
		p := haproxytest.FreePort(t)
		if err := live.Listen(p); err != nil {
			t.Skipf("server stand-in: %v", err)
		}
		livePorts = append(livePorts, uint16(p))
		deadPorts = append(deadPorts, uint16(haproxytest.FreePort(t))) // nothing listens
		newPorts = append(newPorts, uint16(haproxytest.FreePort(t)))
	}
	servers := func(ports []uint16) []model.Server {
		var out []model.Server
		for _, p := range ports {
			out = append(out, model.Server{Addr: netip.MustParseAddr("127.0.0.1"), Port: p})
		}
		return out
	}
	fast := model.Check{Enabled: true, Inter: inter, Rise: 2, Fall: fall}
	nodes := []model.Server{{Addr: netip.MustParseAddr("127.79.0.1")}, {Addr: netip.MustParseAddr("127.79.0.2")}}
	config := func(added bool) model.Config {
		cfg := model.Config{Backends: []*model.Backend{
			{Name: model.NodesBackend, Servers: nodes}, // no node check: the agent
			{Name: "be_dead", Balance: "roundrobin", Check: fast, Servers: servers(deadPorts)},
			{Name: "be_follow", Balance: "roundrobin", TrackNodes: true, Servers: []model.Server{{Addr: nodes[0].Addr, Port: 30080}, {Addr: nodes[1].Addr, Port: 30080}}},
			{Name: "be_live", Balance: "roundrobin", Check: fast, Servers: servers(livePorts)},
		}}
		if added {
			cfg.Backends = append(cfg.Backends, &model.Backend{Name: "be_new", Balance: "roundrobin", Check: fast, Servers: servers(newPorts)})
		}
		return cfg
	}

	// A start: HAProxy runs the configuration the driver renders.
	dir := t.TempDir()
	cfgPath, statePath := filepath.Join(dir, "haproxy.cfg"), filepath.Join(dir, "server-state")
	ropts := render.Options{StatsSocket: haproxytest.StatsSocketPath(dir), StateFile: statePath}
	layout, _ := plan.Assign(config(false), nil, true)
	if err := os.WriteFile(cfgPath, render.Config(config(false), layout, ropts), 0o644); err != nil {
		t.Fatal(err)
	}
	started := time.Now()
	p := haproxytest.Start(t, dir, cfgPath)
	took := waitDown(ctx, t, p.StatsSocket, "after a start", started, bound, "be_dead", 3)
	t.Logf("after a start: the failing servers DOWN %v after it (check inter %v fall %d; bound %v)", took, inter, fall, bound)
	waitStatus(ctx, t, p.StatsSocket, "after a start", "be_live", "UP", 3, bound)

	// A reload (a new Service), then the servers of be_live fail.
	d := NewHAProxy(Options{ConfigPath: cfgPath, Binary: haproxytest.Bin(), MasterSocket: p.MasterSocket, ReloadTimeout: time.Minute, Render: ropts,
		staticBackends: true}) // the new Service is a reload on 3.4+ too
	t.Cleanup(func() { _ = d.Close() })
	if _, err := d.Apply(ctx, config(false)); err != nil {
		t.Fatal(err)
	}
	res, err := d.Apply(ctx, config(true))
	if err != nil || !res.Reloaded {
		t.Fatalf("a new Service: reloaded %v, %v; want a reload", res.Reloaded, err)
	}
	live.Close()
	failed := time.Now()
	took = waitDown(ctx, t, p.StatsSocket, "after a reload, a new Service's failing servers", failed, bound, "be_new", 3)
	t.Logf("after a reload: a new Service's failing servers DOWN %v after it", took)
	took = waitDown(ctx, t, p.StatsSocket, "after a reload, servers that were UP and fail", failed, bound, "be_live", 3)
	t.Logf("after a reload: servers that were UP DOWN %v after they failed", took)

	// The agent failed every second meanwhile: no node's server is down
	// for it, nor any server following one.
	rows := stat(ctx, t, p.StatsSocket)
	for _, r := range rows {
		if (r.Proxy == model.NodesBackend || r.Proxy == "be_follow") && r.Addr != "127.0.0.1" && r.Down() {
			t.Errorf("%s/%s is %s: the agent's failures took it down", r.Proxy, r.Server, r.Status)
		}
	}
}

func stat(ctx context.Context, t *testing.T, socket string) []haproxy.StatRow {
	t.Helper()
	rt := haproxy.NewRuntime(socket) // a connection of its own: reloads close the worker's
	defer rt.Close()
	out, err := rt.Exec(ctx, []string{"show stat"})
	if err != nil {
		t.Fatalf("show stat: %v", err)
	}
	rows, err := haproxy.ParseStat(out[0])
	if err != nil {
		t.Fatal(err)
	}
	return rows
}

// waitDown waits until the n servers of backend be that are not free
// slots are DOWN, at most bound after since, and returns how long after
// since they all were.
func waitDown(ctx context.Context, t *testing.T, socket, step string, since time.Time, bound time.Duration, be string, n int) time.Duration {
	t.Helper()
	deadline := since.Add(bound)
	for {
		var down, all []string
		for _, r := range stat(ctx, t, socket) {
			if r.Proxy != be || strings.HasPrefix(r.Status, "MAINT") {
				continue
			}
			all = append(all, r.Server+" "+r.Status)
			if strings.HasPrefix(r.Status, "DOWN") {
				down = append(down, r.Server)
			}
		}
		if len(all) != n {
			t.Fatalf("%s: %s has servers %v, want %d", step, be, all, n)
		}
		if len(down) == n {
			return time.Since(since)
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s: %s not all DOWN %v after their checks began failing (bound %v): %v", step, be, time.Since(since), bound, all)
		}
		time.Sleep(inter4) // poll interval, bounded by the deadline
	}
}

// waitStatus waits until the n servers of be that are not free slots
// read status.
func waitStatus(ctx context.Context, t *testing.T, socket, step, be, status string, n int, bound time.Duration) {
	t.Helper()
	deadline := time.Now().Add(bound)
	for {
		var all []string
		ok := 0
		for _, r := range stat(ctx, t, socket) {
			if r.Proxy == be && !strings.HasPrefix(r.Status, "MAINT") {
				all = append(all, r.Server+" "+r.Status)
				if r.Status == status {
					ok++
				}
			}
		}
		if ok == n && len(all) == n {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s: %s servers %v, want %d %s", step, be, all, n, status)
		}
		time.Sleep(inter4)
	}
}

// inter4 is the poll interval of the waits: a quarter of the checks'.
const inter4 = 50 * time.Millisecond
