package dataplaneapi

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"maps"
	"net/http"
	"net/netip"
	"net/url"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/haproxy-k8s-sync/haproxy-k8s-sync/internal/dataplane"
	"github.com/haproxy-k8s-sync/haproxy-k8s-sync/internal/model"
)

// trackWorld is every-Service mode with servers following their node: two
// Services on the nodes given, and the model.NodesBackend.
type trackWorld struct {
	check model.Check    // the node check (--node-check), or none: the agent
	nodes []model.Server // the model.NodesBackend's servers (no port)
	svcs  []*model.Backend
	fes   []model.Frontend
}

func newTrackWorld(t *testing.T, a *api, port uint16, nodes ...string) *trackWorld {
	w := &trackWorld{}
	for _, n := range nodes {
		w.nodes = append(w.nodes, model.Server{Addr: netip.MustParseAddr(n)})
	}
	for i, ns := range []string{"hks-trk-a", "hks-trk-b"} {
		cfg := classCfg(t, a, ns, "127.81.12.10", port+uint16(i), "be_"+ns+"_web_80")
		be := cfg.Backends[0]
		be.TrackNodes, be.Check = true, model.Check{}
		w.svcs = append(w.svcs, be)
		w.fes = append(w.fes, cfg.Frontends...)
	}
	w.setServers()
	return w
}

// setServers gives every Service a server on each node (new slices: the
// desired package hands out the same slice only while nothing changes).
func (w *trackWorld) setServers() {
	for i, be := range w.svcs {
		nb := *be
		nb.Servers = nil
		for _, n := range w.nodes {
			nb.Servers = append(nb.Servers, model.Server{Addr: n.Addr, Port: 30080 + uint16(i)})
		}
		w.svcs[i] = &nb
	}
}

// node sets a node's state (new _nodes servers, the Services untouched:
// as the desired package does when a node's eligibility changes).
func (w *trackWorld) node(addr string, down bool) {
	w.nodes = append([]model.Server(nil), w.nodes...)
	for i := range w.nodes {
		if w.nodes[i].Addr.String() == addr {
			w.nodes[i].Maint = down
		}
	}
}

func (w *trackWorld) cfg() model.Config {
	nb := &model.Backend{Name: model.NodesBackend, Servers: w.nodes, Check: w.check}
	return model.Config{Backends: append([]*model.Backend{nb}, w.svcs...), Frontends: w.fes}
}

// followers lists, for a Service backend's configured servers, the node
// address of the _nodes slot each follows ("" for none).
func followers(t *testing.T, a *api, be string) map[string]string {
	t.Helper()
	nodes, _, err := a.c.List(context.Background(), dataplane.ServersPath(model.NodesBackend), "")
	if err != nil && !errors.Is(err, dataplane.ErrNotFound) {
		t.Fatal(err)
	}
	addr := map[string]string{}
	for _, n := range nodes {
		addr[model.NodesBackend+"/"+fmt.Sprint(n["name"])] = fmt.Sprint(n["address"])
	}
	srvs, _, err := a.c.List(context.Background(), dataplane.ServersPath(be), "")
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]string{}
	for _, s := range srvs {
		if s["maintenance"] != "enabled" {
			tr, _ := s["track"].(string)
			out[fmt.Sprint(s["address"])] = addr[tr]
		}
	}
	return out
}

func TestContractTrackNodes(t *testing.T) {
	// The node check of a node that answers none (nothing listens there)
	// takes the node down, but not out of service: what is checked here.
	httpCheck := model.Check{Enabled: true, Inter: time.Hour, Rise: 2, Fall: 2, Port: 10256, HTTP: model.HTTPCheck{Path: "/healthz"}}
	for _, path := range []struct {
		name  string
		raw   int
		check model.Check
	}{{"transactions", -1, model.Check{}}, {"raw", 1, model.Check{}}, {"raw, node check", 1, httpCheck}, {"transactions, node check", -1, httpCheck}} {
		t.Run(path.name, func(t *testing.T) {
			run(t, func(t *testing.T, a *api) { trackNodes(t, a, path.raw, path.check) })
		})
	}
}

func trackNodes(t *testing.T, a *api, rawMin int, check model.Check) {
	ctx := context.Background()
	t.Cleanup(func() { a.deleteSection(t, dataplane.BackendPath(model.NodesBackend)) }) // last: after its followers
	w := newTrackWorld(t, a, uint16(freeTCPPort(t)), "127.81.12.1", "127.81.12.2")
	w.check = check
	var log lockedBuf
	d := a.driver(Options{RawMinWrites: rawMin, Logger: slog.New(slog.NewTextHandler(&log, nil))})
	apply(t, d, w.cfg())
	if strings.Contains(log.String(), "cannot be written as text") {
		t.Errorf("the raw path fell back to a transaction: %s", log.String())
	}
	be := w.svcs[0].Name
	var nb Object // read whole: the rule lists come only so
	_, err := a.c.Do(ctx, http.MethodGet, dataplane.BackendPath(model.NodesBackend), url.Values{"full_section": {"true"}}, nil, &nb)
	delete(nb, "servers")
	wantNodes := Object{"name": model.NodesBackend, "mode": "tcp", "default_server": agentNever(model.AgentInterIdle)}
	if check.Enabled {
		wantNodes = Object{"name": model.NodesBackend, "mode": "tcp", "adv_check": "httpchk",
			"httpchk_params":  map[string]any{"method": "GET", "uri": "/healthz"},
			"http_check_list": []any{map[string]any{"type": "expect", "match": "status", "pattern": "200"}},
			"default_server":  map[string]any{"check": "enabled", "inter": int64(3600000), "rise": int64(2), "fall": int64(2), "health_check_port": int64(10256)}}
	}
	delete(nb, "from")
	if err != nil || !same(nb, wantNodes) {
		t.Fatalf("_nodes: %v (%v), want %v", nb, err, wantNodes)
	}
	want := map[string]string{"127.81.12.1": "127.81.12.1", "127.81.12.2": "127.81.12.2"}
	for _, s := range w.svcs {
		if got := followers(t, a, s.Name); !maps.Equal(got, want) {
			t.Errorf("%s: servers follow %v, want each its node's slot %v", s.Name, got, want)
		}
	}
	passEach := func(what string, wantOps int, serving ...[]string) {
		t.Helper()
		r0 := a.reloads(t)
		res, err := d.Apply(ctx, w.cfg())
		if err != nil || res.Reloaded || res.Ops != wantOps {
			t.Errorf("%s: ops %d reloaded %v err %v, want %d runtime requests and no reload", what, res.Ops, res.Reloaded, err, wantOps)
		}
		if r := a.reloads(t); r != r0 {
			t.Errorf("%s: %d reloads", what, r-r0)
		}
		for i, s := range w.svcs {
			want := map[string]bool{}
			for _, n := range serving[min(i, len(serving)-1)] {
				want[fmt.Sprintf("%s:%d", n, 30080+i)] = true
			}
			if got := a.serving(t, s.Name); !maps.Equal(got, want) {
				t.Errorf("%s: %s serving %v, want %v", what, s.Name, got, want)
			}
		}
	}
	pass := func(what string, wantOps int, serving ...string) {
		t.Helper()
		passEach(what, wantOps, serving)
	}
	// A node out and back: one runtime request on its slot each time.
	w.node("127.81.12.2", true)
	pass("node excluded", 1, "127.81.12.1")
	d.Invalidate()
	pass("resync", 0, "127.81.12.1")
	// A new controller reads what runs: the followers of the node out
	// read "maint" whatever their own state, so it sets them ready once
	// (harmless: their own state), and is done.
	d2 := a.driver(Options{RawMinWrites: rawMin})
	if res, err := d2.Apply(ctx, w.cfg()); err != nil || res.Reloaded {
		t.Fatalf("a new controller: reloaded %v err %v", res.Reloaded, err)
	}
	if res, err := d2.Apply(ctx, w.cfg()); err != nil || res.Ops != 0 {
		t.Errorf("a new controller's second pass: ops %d err %v, want nothing to do", res.Ops, err)
	}
	w.node("127.81.12.2", false)
	pass("node included", 1, "127.81.12.1", "127.81.12.2")
	// A new node: its slot, and a server in a free slot of each backend
	// that follows no node yet (address, then ready: two requests each).
	w.nodes = append(w.nodes, model.Server{Addr: netip.MustParseAddr("127.81.12.3")})
	w.setServers()
	pass("node added", 6, "127.81.12.1", "127.81.12.2", "127.81.12.3")
	// Its servers carry its state themselves until a reload binds them.
	w.node("127.81.12.3", true)
	pass("new node excluded", 3, "127.81.12.1", "127.81.12.2")
	// A reload (a setting changes) binds them: the node is one request again.
	changed := *w.svcs[0]
	changed.TimeoutServer *= 2
	w.svcs[0] = &changed
	if res, err := d.Apply(ctx, w.cfg()); err != nil || !res.Reloaded {
		t.Fatalf("setting change: reloaded %v err %v", res.Reloaded, err)
	}
	want["127.81.12.3"] = "127.81.12.3"
	if got := followers(t, a, be); !maps.Equal(got, want) {
		t.Errorf("after the reload %s follows %v, want %v (the node out: inherited, not its own)", be, got, want)
	}
	w.node("127.81.12.3", false)
	pass("new node included after the reload", 1, "127.81.12.1", "127.81.12.2", "127.81.12.3")
	for _, s := range w.svcs {
		if got := followers(t, a, s.Name); !maps.Equal(got, want) {
			t.Errorf("%s follows %v, want %v", s.Name, got, want)
		}
	}
	// A node deleted: one request, its slot into maintenance; its
	// followers inherit it, and owe their own (owed.go).
	w.nodes = slices.DeleteFunc(slices.Clone(w.nodes), func(n model.Server) bool { return n.Addr.String() == "127.81.12.2" })
	w.setServers()
	pass("node deleted", 1, "127.81.12.1", "127.81.12.3")
	// Another node joins: not into the deleted node's slot, whose
	// followers would serve at its address; its slot and a loose slot per
	// backend, an address and a state each.
	w.nodes = append(w.nodes, model.Server{Addr: netip.MustParseAddr("127.81.12.4")})
	w.setServers()
	pass("another node added", 6, "127.81.12.1", "127.81.12.3", "127.81.12.4")
	// The deleted node returns: its slot, and its followers serve again
	// with no request of their own.
	w.nodes = append(w.nodes, model.Server{Addr: netip.MustParseAddr("127.81.12.2")})
	w.setServers()
	all := []string{"127.81.12.1", "127.81.12.2", "127.81.12.3", "127.81.12.4"}
	pass("deleted node back", 1, all...)
	// A server of a node out goes: nothing to send (its follower inherits
	// the node's maintenance); once the node is back, that follower is
	// put in maintenance right after it.
	w.node("127.81.12.1", true)
	pass("node excluded again", 1, all[1:]...)
	other := *w.svcs[1]
	other.Servers = other.Servers[1:]
	w.svcs[1] = &other
	pass("a server of the node out goes", 0, all[1:]...)
	w.node("127.81.12.1", false)
	passEach("node included again", 2, all, all[1:])
	// haproxy.cfg catches up; a new controller then finds nothing to do.
	if err := d.Flush(ctx); err != nil {
		t.Fatal(err)
	}
	d3 := a.driver(Options{RawMinWrites: rawMin})
	if res, err := d3.Apply(ctx, w.cfg()); err != nil || res.Ops != 0 {
		t.Errorf("a new controller after the flush: ops %d err %v, want nothing to do", res.Ops, err)
	}
	// Every Service gone: their sections and _nodes go.
	apply(t, d3, model.Config{})
	if bes := names(t, a, dataplane.BackendsPath); bes[model.NodesBackend] || bes[be] {
		t.Errorf("after every Service went: backends %v", bes)
	}
}

// lockedBuf is a log destination the driver's goroutines may share.
type lockedBuf struct {
	mu sync.Mutex
	b  strings.Builder
}

func (l *lockedBuf) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *lockedBuf) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}

// A Service that stops following its node (a check of its own), then
// every Service (--track-nodes=false: no _nodes): its slots are unbound at
// the reload that change needs (HAProxy refuses a check with a track, and
// a track of a server that is gone).
func TestContractTrackNodesOff(t *testing.T) {
	for _, path := range []struct {
		name string
		raw  int
	}{{"transactions", -1}, {"raw", 1}} {
		t.Run(path.name, func(t *testing.T) {
			run(t, func(t *testing.T, a *api) {
				ctx := context.Background()
				t.Cleanup(func() { a.deleteSection(t, dataplane.BackendPath(model.NodesBackend)) })
				w := newTrackWorld(t, a, uint16(freeTCPPort(t)), "127.81.12.1", "127.81.12.2")
				d := a.driver(Options{RawMinWrites: path.raw})
				apply(t, d, w.cfg())
				w.node("127.81.12.2", true)
				apply(t, d, w.cfg())
				own := *w.svcs[0]
				own.TrackNodes, own.Check = false, model.Check{Enabled: true, Inter: time.Hour, Rise: 2, Fall: 3}
				w.svcs[0] = &own
				// It carries its node's state itself now: the node out
				// leaves its server out.
				own.Servers = own.Servers[:1]
				if res, err := d.Apply(ctx, w.cfg()); err != nil || !res.Reloaded {
					t.Fatalf("a check of its own: reloaded %v err %v", res.Reloaded, err)
				}
				if got := followers(t, a, own.Name); !maps.Equal(got, map[string]string{"127.81.12.1": ""}) {
					t.Errorf("%s follows %v, want nothing", own.Name, got)
				}
				if got := followers(t, a, w.svcs[1].Name); !maps.Equal(got, map[string]string{"127.81.12.1": "127.81.12.1", "127.81.12.2": "127.81.12.2"}) {
					t.Errorf("%s follows %v, want its nodes", w.svcs[1].Name, got)
				}
				// No _nodes any more.
				other := *w.svcs[1]
				other.TrackNodes, other.Servers = false, other.Servers[:1]
				w.svcs[1] = &other
				cfg := w.cfg()
				cfg.Backends = cfg.Backends[1:]
				if res, err := d.Apply(ctx, cfg); err != nil || !res.Reloaded {
					t.Fatalf("--track-nodes=false: reloaded %v err %v", res.Reloaded, err)
				}
				if bes := names(t, a, dataplane.BackendsPath); bes[model.NodesBackend] {
					t.Errorf("_nodes left: %v", bes)
				}
				for _, s := range w.svcs {
					if got := followers(t, a, s.Name); !maps.Equal(got, map[string]string{"127.81.12.1": ""}) {
						t.Errorf("%s follows %v, want nothing", s.Name, got)
					}
				}
				apply(t, d, model.Config{})
			})
		})
	}
}
