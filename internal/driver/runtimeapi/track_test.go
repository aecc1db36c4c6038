package runtimeapi

import (
	"context"
	"fmt"
	"net/netip"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/haproxy-k8s-sync/haproxy-k8s-sync/internal/haproxy"
	"github.com/haproxy-k8s-sync/haproxy-k8s-sync/internal/haproxy/haproxytest"
	"github.com/haproxy-k8s-sync/haproxy-k8s-sync/internal/model"
	"github.com/haproxy-k8s-sync/haproxy-k8s-sync/internal/render"
	"github.com/haproxy-k8s-sync/haproxy-k8s-sync/internal/testing/lab"
)

// trackWorld is a set of backends that follow their nodes, with node
// stand-ins behind them and a frontend each.
type trackWorld struct {
	t        *testing.T
	nodes    []*lab.NodeServer
	ports    []int // the frontends' listen ports
	nodePort uint16
	down     map[int]bool // node index -> not eligible
	joined   int          // nodes 0..joined-1 exist
	// checked: the nodes have health checks (checkedNodes), which a
	// loaded machine can fail for a moment (a stand-in answering after
	// the check's timeout): checkTraffic then waits for a node missing
	checked bool
}

func newTrackWorld(t *testing.T, backends, nodes, joined int) *trackWorld {
	w := &trackWorld{t: t, nodePort: uint16(haproxytest.FreePort(t)), down: map[int]bool{}, joined: joined}
	for i := range nodes {
		n := lab.NewNodeServer(fmt.Sprint("node-", i), fmt.Sprintf("127.77.0.%d", i+1))
		if err := n.Listen(int(w.nodePort)); err != nil {
			t.Skipf("node stand-in: %v", err)
		}
		t.Cleanup(n.Close)
		w.nodes = append(w.nodes, n)
	}
	for range backends {
		w.ports = append(w.ports, haproxytest.FreePort(t))
	}
	return w
}

func (w *trackWorld) addr(i int) netip.Addr { return netip.MustParseAddr(w.nodes[i].IP) }

// config is what the desired package builds: every backend has a server
// on every existing node (Cluster policy); the NodesBackend says which
// nodes are down.
func (w *trackWorld) config() model.Config {
	var cfg model.Config
	nb := model.Backend{Name: model.NodesBackend}
	var servers []model.Server
	for i := range w.joined {
		nb.Servers = append(nb.Servers, model.Server{Addr: w.addr(i), Maint: w.down[i]})
		servers = append(servers, model.Server{Addr: w.addr(i), Port: w.nodePort})
	}
	cfg.Backends = append(cfg.Backends, &nb)
	for b, port := range w.ports {
		name := fmt.Sprintf("be_%d", b)
		cfg.Frontends = append(cfg.Frontends, model.Frontend{Name: fmt.Sprintf("fe_%d", b), Backend: name,
			Binds: []model.Bind{{Addr: netip.MustParseAddr("127.0.0.1"), Port: uint16(port)}}})
		cfg.Backends = append(cfg.Backends, &model.Backend{Name: name, Balance: "roundrobin", TrackNodes: true, Servers: servers})
	}
	return cfg
}

// checkedNodes gives every node of w a health stand-in, all on one free
// port, and returns them with the config of w whose _nodes backend has
// check (its Port set to that one). Skips t where a stand-in cannot
// listen.
func (w *trackWorld) checkedNodes(check model.Check) (func() model.Config, []*lab.HealthServer) {
	w.t.Helper()
	check.Port = uint16(haproxytest.FreePort(w.t))
	w.checked = true
	var health []*lab.HealthServer
	for _, n := range w.nodes {
		h, err := lab.NewHealthServer(fmt.Sprintf("%s:%d", n.IP, check.Port))
		if err != nil {
			w.t.Skipf("health stand-in: %v", err)
		}
		w.t.Cleanup(h.Close)
		health = append(health, h)
	}
	return func() model.Config {
		cfg := w.config()
		nodes := *cfg.Backends[0]
		nodes.Check = check
		cfg.Backends[0] = &nodes
		return cfg
	}, health
}

// served returns which nodes answer through the frontend of backend b,
// over enough connections for round robin to reach every server in
// service.
func (w *trackWorld) served(b int) map[string]bool {
	got := map[string]bool{}
	for range 2 * len(w.nodes) {
		name, err := lab.Probe(fmt.Sprintf("127.0.0.1:%d", w.ports[b]), 2*time.Second)
		if err != nil {
			w.t.Fatalf("probe backend %d: %v", b, err)
		}
		got[name] = true
	}
	return got
}

func (w *trackWorld) wantServed() map[string]bool {
	want := map[string]bool{}
	for i := range w.joined {
		if !w.down[i] {
			want[w.nodes[i].Name] = true
		}
	}
	return want
}

// checkTraffic fails the test unless every backend is served by exactly
// the nodes that should be. A node served that should not be fails at
// once; with health checks (w.checked) a node missing is waited for a
// while (its check failed under load and rises again), never forever.
func (w *trackWorld) checkTraffic(step string) {
	w.t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for b := range w.ports {
		for {
			got, want := w.served(b), w.wantServed()
			if fmt.Sprint(got) == fmt.Sprint(want) {
				break
			}
			if !w.checked || !subset(got, want) || time.Now().After(deadline) {
				w.t.Fatalf("%s: backend %d served by %v, want %v", step, b, got, want)
			}
			time.Sleep(100 * time.Millisecond) // poll interval, bounded by the deadline
		}
	}
}

// subset is whether every key of a is in b.
func subset(a, b map[string]bool) bool {
	for k := range a {
		if !b[k] {
			return false
		}
	}
	return true
}

// A node going down or coming back is one Runtime API command whatever
// the number of backends: their servers follow the node's server. A node
// that joined after the last reload sits in slots that follow no node,
// and its state is set on each of them. Traffic goes where it should at
// every step.
func TestNodeTracking(t *testing.T) {
	lb := startLab(t)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	w := newTrackWorld(t, 4, 3, 2)
	apply := func(step string, wantOps int) {
		t.Helper()
		res, err := lb.d.Apply(ctx, w.config())
		if err != nil {
			t.Fatalf("%s: %v", step, err)
		}
		if wantOps >= 0 && (res.Reloaded || res.Ops != wantOps) {
			t.Fatalf("%s: reloaded %v, %d operations, want %d without a reload", step, res.Reloaded, res.Ops, wantOps)
		}
		w.checkTraffic(step)
	}
	apply("start", -1)

	w.down[1] = true
	apply("node 1 down", 1)
	w.down[1] = false
	apply("node 1 back", 1)

	w.joined = 3 // node 2 joins: each backend takes it in a free slot that follows no node
	apply("node 2 joins", -1)
	w.down[2] = true
	apply("node 2 down", 1+len(w.ports)) // its node slot, and its server in each backend
	w.down[0] = true
	apply("node 0 down too", 1)
	w.down[0], w.down[2] = false, false
	apply("both back", 2+len(w.ports))

	// The config written for a reload binds every used slot: once
	// reloaded, node 2 too is one command.
	cfg := w.config()
	if _, err := lb.d.Apply(ctx, cfg); err != nil {
		t.Fatal(err)
	}
	lb.d.Invalidate() // next Apply reads back, then the config keeps its bindings
	data, err := os.ReadFile(lb.cfgPath)
	if err != nil {
		t.Fatal(err)
	}
	if n := strings.Count(string(data), " track "+model.NodesBackend+"/"); n != 2*len(w.ports) {
		t.Fatalf("config binds %d slots before a reload, want %d", n, 2*len(w.ports))
	}
}

// A controller that starts against an HAProxy whose backends follow
// their nodes learns the bindings from the config file (the Runtime API
// does not show them) and needs no reload; when the file is not the one
// running, it reloads, which binds the slots again.
func TestNodeTrackingRestart(t *testing.T) {
	lb := startLab(t)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	w := newTrackWorld(t, 3, 2, 2)
	if _, err := lb.d.Apply(ctx, w.config()); err != nil {
		t.Fatal(err)
	}
	restart := func() *HAProxy {
		d := NewHAProxy(Options{
			ConfigPath: lb.cfgPath, Binary: haproxytest.Bin(), MasterSocket: lb.p.MasterSocket, ReloadTimeout: time.Minute,
			Render: render.Options{StatsSocket: lb.p.StatsSocket, StateFile: lb.statePath},
		})
		t.Cleanup(func() { _ = d.Close() })
		return d
	}
	d := restart()
	w.down[1] = true
	res, err := d.Apply(ctx, w.config())
	if err != nil || res.Reloaded || res.Ops != 1 {
		t.Fatalf("after a controller restart: reloaded %v (%v), %d operations, %v; want one operation", res.Reloaded, res.Reasons, res.Ops, err)
	}
	w.checkTraffic("node 1 down after restart")

	// A config file that is not the running one: the bindings are unknown.
	data, err := os.ReadFile(lb.cfgPath)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(lb.cfgPath, []byte(strings.Replace(string(data), "description "+render.DescriptionPrefix, "description "+render.DescriptionPrefix+"x", 1)), 0o644); err != nil {
		t.Fatal(err)
	}
	d = restart()
	w.down[1] = false
	res, err = d.Apply(ctx, w.config())
	if err != nil || !res.Reloaded {
		t.Fatalf("unknown bindings: reloaded %v, %v; want a reload", res.Reloaded, err)
	}
	w.checkTraffic("after the reload")
	st, err := haproxy.NewRuntime(lb.p.StatsSocket).ShowServersState(ctx)
	if err != nil {
		t.Fatal(err)
	}
	for _, s := range st {
		if s.Backend != model.NodesBackend && s.Up() && s.AdminState&haproxy.AdminInheritedMaint != 0 {
			t.Errorf("%s/%s still inherits maintenance", s.Backend, s.Server)
		}
	}
}
