package render

import (
	"net/netip"
	"testing"

	"github.com/haproxy-k8s-sync/haproxy-k8s-sync/internal/model"
)

func TestHashMemo(t *testing.T) {
	srv := func(a string) model.Server { return model.Server{Addr: netip.MustParseAddr(a), Port: 30000} }
	cfg := func(balance string, servers ...model.Server) model.Config {
		return model.Config{
			Frontends: []model.Frontend{{Name: "fe_a", Backend: "be_a", Binds: []model.Bind{{Port: 80}}}},
			Backends:  []*model.Backend{{Name: "be_a", Balance: balance, Servers: servers}},
		}
	}
	layout := func(n int, servers ...model.Server) model.Layout {
		slots := make([]model.Slot, n)
		for i := range slots {
			if i < len(servers) {
				slots[i].Used, slots[i].Server = true, servers[i]
			}
		}
		return model.Layout{"be_a": slots}
	}
	opts := Options{StatsSocket: "/s"}
	var m HashMemo
	steps := []struct {
		cfg    model.Config
		layout model.Layout
		opts   Options
	}{
		{cfg("roundrobin", srv("10.0.0.1")), layout(4, srv("10.0.0.1")), opts},
		{cfg("roundrobin", srv("10.0.0.2")), layout(4, srv("10.0.0.2")), opts},                      // servers only
		{cfg("leastconn", srv("10.0.0.2")), layout(4, srv("10.0.0.2")), opts},                       // setting
		{cfg("leastconn", srv("10.0.0.2")), layout(8, srv("10.0.0.2")), opts},                       // slots
		{cfg("leastconn", srv("10.0.0.2")), layout(8, srv("10.0.0.2")), Options{StatsSocket: "/t"}}, // options
		{model.Config{}, nil, opts},
		{cfg("leastconn", srv("10.0.0.2")), layout(8, srv("10.0.0.2")), opts},
		{cfg("leastconn", srv("10.0.0.2")), withTrack(layout(8, srv("10.0.0.2"))), opts}, // a slot follows a node
	}
	for i, s := range steps {
		if got, want := m.StructureHash(s.cfg, s.layout, s.opts), StructureHash(s.cfg, s.layout, s.opts); got != want {
			t.Fatalf("step %d: memo hash %s, want %s", i, got, want)
		}
	}
}

// withTrack binds the first slot of every backend to a node.
func withTrack(l model.Layout) model.Layout {
	for be, slots := range l {
		slots = append([]model.Slot(nil), slots...)
		slots[0].Track = 1
		l[be] = slots
	}
	return l
}

// Rebase swaps the references the memo keeps only for the hash it holds.
func TestHashMemoRebase(t *testing.T) {
	a := model.Config{Backends: []*model.Backend{{Name: "be_a", Balance: "roundrobin"}}}
	la := model.Layout{"be_a": {{}}}
	b := model.Config{Backends: []*model.Backend{{Name: "be_a", Balance: "roundrobin", Servers: []model.Server{{Port: 1}}}}}
	lb := model.Layout{"be_a": {{Used: true}}}
	var m HashMemo
	h := m.StructureHash(a, la, Options{})
	m.Rebase(b, lb, "another")
	if &m.cfg.Backends[0] != &a.Backends[0] {
		t.Fatal("rebased despite another hash")
	}
	m.Rebase(b, lb, h)
	if &m.cfg.Backends[0] != &b.Backends[0] || len(m.layout["be_a"]) == 0 || !m.layout["be_a"][0].Used {
		t.Fatal("not rebased")
	}
	if got := m.StructureHash(b, lb, Options{}); got != h {
		t.Fatalf("hash after rebase %s, want %s", got, h)
	}
}

// Behind the fixed listener a frontend with no source ranges writes
// nothing into the skeleton: the memo finds a new one no structure
// without rendering; one that writes a rule, or has a section of its
// own, renders again. The hash is always StructureHash's.
func TestHashMemoListened(t *testing.T) {
	opts := Options{ACLDir: "/acl", Listeners: Listeners{Mode: ListenersTProxy}}
	vip := netip.MustParseAddr("203.0.113.10")
	fe := func(name string, port uint16, ranges ...string) model.Frontend {
		f := model.Frontend{Name: "fe_" + name, Backend: "be_" + name, Binds: []model.Bind{{Addr: vip, Port: port, Transparent: true}}}
		for _, r := range ranges {
			f.SourceRanges = append(f.SourceRanges, netip.MustParsePrefix(r))
		}
		return f
	}
	be := func(names ...string) []*model.Backend {
		var out []*model.Backend
		for _, n := range names {
			out = append(out, &model.Backend{Name: "be_" + n, Balance: "roundrobin"})
		}
		return out
	}
	spare := func(service string) *model.Backend {
		return &model.Backend{Name: "_pool_0", Service: service, Balance: "roundrobin"}
	}
	everyAddr := model.Frontend{Name: "fe_c", Backend: "be_c", Binds: []model.Bind{{Port: 81}}} // a section of its own
	steps := []struct {
		name    string
		cfg     model.Config
		renders int // skeletons rendered by this step
	}{
		{"first", model.Config{Frontends: []model.Frontend{fe("a", 80)}, Backends: be("a", "b", "c")}, 1},
		{"a listened Service added", model.Config{Frontends: []model.Frontend{fe("a", 80), fe("b", 82)}, Backends: be("a", "b", "c")}, 0},
		{"its port changed", model.Config{Frontends: []model.Frontend{fe("a", 80), fe("b", 83)}, Backends: be("a", "b", "c")}, 0},
		{"restricted", model.Config{Frontends: []model.Frontend{fe("a", 80), fe("b", 83, "10.0.0.0/8")}, Backends: be("a", "b", "c")}, 1},
		{"its ranges changed", model.Config{Frontends: []model.Frontend{fe("a", 80), fe("b", 83, "10.1.0.0/16")}, Backends: be("a", "b", "c")}, 0},
		{"on every address", model.Config{Frontends: []model.Frontend{fe("a", 80), fe("b", 83, "10.1.0.0/16"), everyAddr}, Backends: be("a", "b", "c")}, 1},
		{"a listened one removed", model.Config{Frontends: []model.Frontend{fe("b", 83, "10.1.0.0/16"), everyAddr}, Backends: be("a", "b", "c")}, 0},
		{"the restricted one gone", model.Config{Frontends: []model.Frontend{everyAddr}, Backends: be("a", "b", "c")}, 1},
		{"a free spare", model.Config{Frontends: []model.Frontend{everyAddr}, Backends: append(be("a", "b", "c"), spare(""))}, 1},
		{"the spare taken by a Service", model.Config{Frontends: []model.Frontend{everyAddr}, Backends: append(be("a", "b", "c"), spare("default/d"))}, 0},
		{"and given back", model.Config{Frontends: []model.Frontend{everyAddr}, Backends: append(be("a", "b", "c"), spare(""))}, 0},
	}
	var m HashMemo
	for _, s := range steps {
		before := m.renders
		if got, want := m.StructureHash(s.cfg, nil, opts), StructureHash(s.cfg, nil, opts); got != want {
			t.Fatalf("%s: memo hash %s, want %s", s.name, got, want)
		}
		if got := m.renders - before; got != s.renders {
			t.Errorf("%s: %d skeletons rendered, want %d", s.name, got, s.renders)
		}
	}
}
