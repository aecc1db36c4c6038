package dataplaneapi

import (
	"context"
	"fmt"
	"maps"
	"net/netip"
	"testing"

	"github.com/haproxy-k8s-sync/haproxy-k8s-sync/internal/dataplane"
	"github.com/haproxy-k8s-sync/haproxy-k8s-sync/internal/model"
)

// trackWorld is every-Service mode with servers following their node: two
// Services on the nodes given, and the model.NodesBackend.
type trackWorld struct {
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
	nb := &model.Backend{Name: model.NodesBackend, Servers: w.nodes}
	return model.Config{Backends: append([]*model.Backend{nb}, w.svcs...), Frontends: w.fes}
}

// followers lists, for a Service backend's configured servers, the node
// address of the _nodes slot each follows ("" for none).
func followers(t *testing.T, a *api, be string) map[string]string {
	t.Helper()
	nodes, _, err := a.c.List(context.Background(), dataplane.ServersPath(model.NodesBackend), "")
	if err != nil {
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
	for _, path := range []struct {
		name string
		raw  int
	}{{"transactions", -1}, {"raw", 1}} {
		t.Run(path.name, func(t *testing.T) {
			run(t, func(t *testing.T, a *api) { trackNodes(t, a, path.raw) })
		})
	}
}

func trackNodes(t *testing.T, a *api, rawMin int) {
	ctx := context.Background()
	t.Cleanup(func() { a.deleteSection(t, dataplane.BackendPath(model.NodesBackend)) }) // last: after its followers
	w := newTrackWorld(t, a, uint16(freeTCPPort(t)), "127.81.12.1", "127.81.12.2")
	d := a.driver(Options{RawMinWrites: rawMin})
	apply(t, d, w.cfg())
	be := w.svcs[0].Name
	nb, _, err := a.c.Get(ctx, dataplane.BackendPath(model.NodesBackend), "")
	if err != nil || !same(nb["default_server"], agentNever) {
		t.Fatalf("_nodes: %v (%v), want the agent that never answers", nb, err)
	}
	want := map[string]string{"127.81.12.1": "127.81.12.1", "127.81.12.2": "127.81.12.2"}
	for _, s := range w.svcs {
		if got := followers(t, a, s.Name); !maps.Equal(got, want) {
			t.Errorf("%s: servers follow %v, want each its node's slot %v", s.Name, got, want)
		}
	}
	pass := func(what string, wantOps int, serving ...string) {
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
			for _, n := range serving {
				want[fmt.Sprintf("%s:%d", n, 30080+i)] = true
			}
			if got := a.serving(t, s.Name); !maps.Equal(got, want) {
				t.Errorf("%s: %s serving %v, want %v", what, s.Name, got, want)
			}
		}
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
