package spares

import (
	"net/netip"
	"reflect"
	"slices"
	"testing"
	"time"

	"github.com/haproxy-k8s-sync/haproxy-k8s-sync/internal/model"
)

func be(name string, timeout time.Duration, servers ...string) *model.Backend {
	b := &model.Backend{Name: name, Service: "ns/" + name, Balance: "roundrobin", TimeoutServer: timeout}
	for _, s := range servers {
		ap := netip.MustParseAddrPort(s)
		b.Servers = append(b.Servers, model.Server{Addr: ap.Addr(), Port: ap.Port()})
	}
	return b
}

func cfgOf(bs ...*model.Backend) model.Config {
	c := model.Config{Backends: bs}
	slices.SortFunc(c.Backends, func(a, b *model.Backend) int {
		if a.Name < b.Name {
			return -1
		}
		return 1
	})
	return c
}

// occupants lists each spare as "name=occupant" (free: "name=").
func occupants(s State) []string {
	var out []string
	for _, sp := range s.Spares {
		out = append(out, sp.Name+"="+sp.Occupant)
	}
	return out
}

func TestSpareName(t *testing.T) {
	for _, tc := range []struct {
		name string
		n    int
		ok   bool
	}{
		{"_pool_0", 0, true}, {"_pool_17", 17, true}, {"_pool_", 0, false}, {"_pool_01", 0, false},
		{"_pool_1x", 0, false}, {"pool_1", 0, false}, {"_nodes", 0, false}, {"_pool_1234567890", 0, false},
	} {
		n, ok := SpareIndex(tc.name)
		if n != tc.n || ok != tc.ok {
			t.Errorf("SpareIndex(%q) = %d, %v; want %d, %v", tc.name, n, ok, tc.n, tc.ok)
		}
		if ok && SpareName(n) != tc.name {
			t.Errorf("SpareName(%d) = %q", n, SpareName(n))
		}
	}
}

func TestOccupy(t *testing.T) {
	def := classKey(be("", 0))
	slow := classKey(be("", time.Minute*5))
	pool := func(occ ...string) State {
		s := State{Classes: []model.Backend{def, slow}}
		for i, o := range occ {
			c := 0
			if i >= 3 {
				c = 1
			}
			s.Spares = append(s.Spares, Spare{Name: SpareName(i), Class: c, Occupant: o})
		}
		return s
	}
	for _, tc := range []struct {
		name    string
		prev    State
		cfg     model.Config
		want    []string
		waiting []string
	}{
		{
			name: "new backends take the lowest free spare of their class",
			prev: pool("", "", "", "", ""),
			cfg:  cfgOf(be("a", 0), be("b", 0), be("c", 5*time.Minute)),
			want: []string{"_pool_0=a", "_pool_1=b", "_pool_2=", "_pool_3=c", "_pool_4="},
		},
		{
			name: "a backend keeps its spare",
			prev: pool("", "b", "", "", ""),
			cfg:  cfgOf(be("a", 0), be("b", 0)),
			want: []string{"_pool_0=a", "_pool_1=b", "_pool_2=", "_pool_3=", "_pool_4="},
		},
		{
			name: "a freed spare is not taken in the same pass",
			prev: pool("gone", "b", "", "", ""),
			cfg:  cfgOf(be("a", 0), be("b", 0)),
			want: []string{"_pool_0=", "_pool_1=b", "_pool_2=a", "_pool_3=", "_pool_4="},
		},
		{
			name:    "a backend whose class has no free spare waits",
			prev:    pool("x", "y", "", "", ""),
			cfg:     cfgOf(be("x", 0), be("y", 0), be("z", 0), be("w", 0)),
			want:    []string{"_pool_0=x", "_pool_1=y", "_pool_2=w", "_pool_3=", "_pool_4="},
			waiting: []string{"z"},
		},
		{
			name: "a backend that changes class moves to a spare of the new class",
			prev: pool("a", "", "", "", ""),
			cfg:  cfgOf(be("a", 5*time.Minute)),
			want: []string{"_pool_0=", "_pool_1=", "_pool_2=", "_pool_3=a", "_pool_4="},
		},
		{
			name:    "a class the pool has not seen waits",
			prev:    pool("", ""),
			cfg:     cfgOf(be("a", time.Second)),
			want:    []string{"_pool_0=", "_pool_1="},
			waiting: []string{"a"},
		},
		{
			name: "the controller's own backends are no spare's",
			prev: pool("", ""),
			cfg:  cfgOf(&model.Backend{Name: model.NodesBackend}, &model.Backend{Name: model.RejectBackend}),
			want: []string{"_pool_0=", "_pool_1="},
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			next, waiting := Occupy(tc.prev, tc.cfg)
			if got := occupants(next); !slices.Equal(got, tc.want) {
				t.Errorf("spares = %v, want %v", got, tc.want)
			}
			if !slices.Equal(waiting, tc.waiting) {
				t.Errorf("waiting = %v, want %v", waiting, tc.waiting)
			}
			if len(tc.prev.Spares) > 0 && tc.prev.Spares[0].Occupant != occupants(tc.prev)[0][len("_pool_0="):] {
				t.Error("Occupy changed prev")
			}
			again, _ := Occupy(next, tc.cfg)
			if !reflect.DeepEqual(occupants(again), occupants(next)) && len(tc.waiting) == 0 {
				t.Errorf("a second pass moved backends: %v, then %v", occupants(next), occupants(again))
			}
		})
	}
}

func TestGrow(t *testing.T) {
	pol := Policy{Spares: 3, Other: 1, LowWater: 2}
	for _, tc := range []struct {
		name    string
		prev    State
		cfg     model.Config
		grow    bool
		want    []string
		classes int
	}{
		{
			name:    "an empty pool grows for every backend and the targets",
			cfg:     cfgOf(be("a", 0), be("b", 0), be("c", time.Minute)),
			grow:    true,
			want:    []string{"_pool_0=a", "_pool_1=b", "_pool_2=c", "_pool_3=", "_pool_4=", "_pool_5=", "_pool_6="},
			classes: 2,
		},
		{
			name: "enough free spares: no growth",
			prev: State{Classes: []model.Backend{classKey(be("", 0))}, Spares: []Spare{
				{Name: "_pool_0", Occupant: "a"}, {Name: "_pool_1"}, {Name: "_pool_2"}}},
			cfg:     cfgOf(be("a", 0)),
			want:    []string{"_pool_0=a", "_pool_1=", "_pool_2="},
			classes: 1,
		},
		{
			name: "below the low-water mark: topped up to the target, numbered after the last",
			prev: State{Classes: []model.Backend{classKey(be("", 0))}, Spares: []Spare{
				{Name: "_pool_0", Occupant: "a"}, {Name: "_pool_4", Occupant: "b"}, {Name: "_pool_7"}}},
			cfg:     cfgOf(be("a", 0), be("b", 0)),
			grow:    true,
			want:    []string{"_pool_0=a", "_pool_4=b", "_pool_7=", "_pool_8=", "_pool_9="},
			classes: 1,
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			occ, waiting := Occupy(tc.prev, tc.cfg)
			grown, grow := Grow(occ, tc.cfg, waiting, pol)
			if grow != tc.grow {
				t.Errorf("grow = %v, want %v", grow, tc.grow)
			}
			if got := occupants(grown); !slices.Equal(got, tc.want) {
				t.Errorf("spares = %v, want %v", got, tc.want)
			}
			if len(grown.Classes) != tc.classes {
				t.Errorf("%d classes, want %d", len(grown.Classes), tc.classes)
			}
			if _, w := Occupy(grown, tc.cfg); len(w) > 0 {
				t.Errorf("after growth %v still wait", w)
			}
		})
	}
	if _, grow := Grow(State{}, cfgOf(be("a", 0)), []string{"a"}, Policy{}); grow {
		t.Error("the zero Policy grew a pool")
	}
}

func TestView(t *testing.T) {
	a, b := be("a", 0, "10.0.0.1:80"), be("b", 0, "10.0.0.2:80")
	nodes := &model.Backend{Name: model.NodesBackend}
	cfg := cfgOf(a, b, nodes)
	cfg.Frontends = []model.Frontend{
		{Name: "fa", Backend: "a"},
		{Name: "fb", Backend: "b"},
		{Name: "gw", Routes: []model.Route{{Backends: []model.WeightedBackend{{Name: "a", Weight: 1}, {Name: "b", Weight: 2}}}}},
	}
	s := State{Classes: []model.Backend{classKey(a)}, Spares: []Spare{{Name: "_pool_0", Occupant: "a"}, {Name: "_pool_1"}}}
	v := View(s, cfg)
	var names []string
	for _, x := range v.Backends {
		names = append(names, x.Name)
	}
	if want := []string{"_nodes", "_pool_0", "_pool_1", "_reject"}; !slices.Equal(names, want) {
		t.Fatalf("backends %v, want %v", names, want)
	}
	if v.Backends[1].Service != "ns/a" || len(v.Backends[1].Servers) != 1 || v.Backends[2].Servers != nil {
		t.Errorf("occupied %+v, free %+v", v.Backends[1], v.Backends[2])
	}
	if !v.Backends[1].SameStructure(&model.Backend{Name: "_pool_0", Service: "ns/a", Balance: "roundrobin"}) {
		t.Errorf("occupied spare's settings are not its occupant's: %+v", v.Backends[1])
	}
	if len(v.Frontends) != 2 || v.Frontends[0].Backend != "_pool_0" {
		t.Errorf("frontends %+v: want fa on _pool_0 and fb (waiting) left out", v.Frontends)
	}
	if got := v.Frontends[1].Routes[0].Backends; got[0].Name != "_pool_0" || got[1].Name != model.RejectBackend {
		t.Errorf("route backends %v", got)
	}
	if cfg.Frontends[2].Routes[0].Backends[0].Name != "a" {
		t.Error("View changed its input's routes")
	}
	if s.HAProxyBackend("a") != "_pool_0" || s.HAProxyBackend("b") != "b" || s.HAProxyBackend(model.NodesBackend) != model.NodesBackend {
		t.Error("HAProxyBackend")
	}
	if s.ModelBackend("_pool_0") != "a" || s.ModelBackend("_pool_1") != "" || s.ModelBackend("x") != "x" {
		t.Error("ModelBackend")
	}
}

func TestFreed(t *testing.T) {
	sticky := classKey(be("", 0))
	sticky.Affinity = time.Minute
	prev := State{Classes: []model.Backend{classKey(be("", 0)), sticky}, Spares: []Spare{
		{Name: "_pool_0", Occupant: "a"}, {Name: "_pool_1", Class: 1, Occupant: "b"},
		{Name: "_pool_2", Class: 1, Occupant: "c"}, {Name: "_pool_3", Class: 1}}}
	next := prev.Clone()
	for i := range next.Spares {
		if next.Spares[i].Occupant != "c" {
			next.Spares[i].Occupant = ""
		}
	}
	if got := Freed(prev, next); !slices.Equal(got, []string{"_pool_1"}) {
		t.Errorf("Freed = %v, want the spare of the sticky class given back, _pool_1", got)
	}
}

// TestHTTPBackendsTakeSpares: an HTTP frontend's backends take spares of
// their own class (mode http) as a TCP route's do, and the view's HTTP
// table names the spares (the HTTP maps are written from it): a backend
// waiting for a spare is model.RejectBackend there, a name the table did
// not give a backend of the model stays, and the model's table is left
// as it was.
func TestHTTPBackendsTakeSpares(t *testing.T) {
	web, api, tcp := be("web", 0, "10.0.0.1:80"), be("api", 0, "10.0.0.3:80"), be("tcp", 0, "10.0.0.2:80")
	web.HTTP, api.HTTP = true, true
	table := func(names ...string) *model.HTTP {
		h := &model.HTTP{Port: 80, Hosts: []model.HTTPHost{{Name: model.AnyHost, Rules: []model.HTTPRule{{PathType: model.PathPrefix, Path: "/", Action: 0}}}}}
		a := model.HTTPAction{}
		for _, n := range names {
			a.Backends = append(a.Backends, model.WeightedBackend{Name: n, Weight: 1})
		}
		h.Actions = []model.HTTPAction{a, {Redirect: &model.Redirect{Scheme: "https", Code: 301}}}
		return h
	}
	httpClass, tcpClass := classKey(web), classKey(tcp)
	for _, tc := range []struct {
		name   string
		spares []Spare // classes: 0 HTTP, 1 TCP
		want   []string
		names  []string // the view's HTTP table's backends
	}{
		{"both served", []Spare{{Name: "_pool_0", Class: 0}, {Name: "_pool_1", Class: 0}, {Name: "_pool_2", Class: 1}},
			[]string{"_pool_0=api", "_pool_1=web", "_pool_2=tcp"}, []string{"_pool_1", "_pool_0", model.RejectBackend}},
		{"one waits", []Spare{{Name: "_pool_0", Class: 0}, {Name: "_pool_1", Class: 1}},
			[]string{"_pool_0=api", "_pool_1=tcp"}, []string{model.RejectBackend, "_pool_0", model.RejectBackend}},
		{"no TCP spare for HTTP", []Spare{{Name: "_pool_0", Class: 1}, {Name: "_pool_1", Class: 1}},
			[]string{"_pool_0=tcp", "_pool_1="}, []string{model.RejectBackend, model.RejectBackend, model.RejectBackend}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cfg := cfgOf(web, api, tcp)
			h := table("web", "api", model.RejectBackend)
			cfg.Frontends = []model.Frontend{{Name: "ft", Backend: "tcp"}, {Name: "fh", HTTP: h}}
			s, _ := Occupy(State{Classes: []model.Backend{httpClass, tcpClass}, Spares: tc.spares}, cfg)
			if got := occupants(s); !reflect.DeepEqual(got, tc.want) {
				t.Fatalf("occupants %v, want %v", got, tc.want)
			}
			v := View(s, cfg)
			var got []string
			for _, wb := range v.Frontends[1].HTTP.Actions[0].Backends {
				got = append(got, wb.Name)
			}
			if !reflect.DeepEqual(got, tc.names) {
				t.Errorf("the view's HTTP table names %v, want %v", got, tc.names)
			}
			if got := h.BackendNames(); !reflect.DeepEqual(got, []string{"web", "api", model.RejectBackend}) {
				t.Errorf("the model's table changed: %v", got)
			}
			if v.Frontends[1].HTTP.Actions[1].Redirect == nil {
				t.Errorf("the redirect action was lost")
			}
			for _, b := range v.Backends {
				if b.Name == "web" || b.Name == "api" {
					t.Errorf("the view keeps the model backend %s under its own name", b.Name)
				}
				if _, ok := SpareIndex(b.Name); ok && b.HTTP != (s.Spares[slices.IndexFunc(s.Spares, func(sp Spare) bool { return sp.Name == b.Name })].Class == 0) {
					t.Errorf("spare %s: HTTP %v, want its class's", b.Name, b.HTTP)
				}
			}
		})
	}
}
