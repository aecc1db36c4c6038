package render

import (
	"bytes"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/haproxy-k8s-sync/haproxy-k8s-sync/internal/model"
	"github.com/haproxy-k8s-sync/haproxy-k8s-sync/internal/plan"
	"github.com/haproxy-k8s-sync/haproxy-k8s-sync/internal/testing/golden"
)

// tcpListener is a gateway TCP listener's frontend on addrs and port,
// its one route split by weight between the backends of routed().
func tcpListener(name string, port uint16, addrs ...string) model.Frontend {
	f := model.Frontend{Name: name, Service: "default/gw2", Routes: []model.Route{{Backends: []model.WeightedBackend{
		{Name: "gw_default_a_80", Weight: 3}, {Name: "gw_default_b_80", Weight: 1}}}}}
	for _, a := range addrs {
		f.Binds = append(f.Binds, model.Bind{Addr: ap(a), Port: port, Transparent: true})
	}
	return f
}

// listenedRoutes is listened() with two gateway TCP listeners the fixed
// listener serves (both families) and a TLS passthrough listener on a
// listenable address, served by the listener too (routed by SNI:
// listenertls.go).
func listenedRoutes() model.Config {
	cfg := listened()
	tls := tcpListener("gw_default_gw2_443", 443, "192.0.2.20")
	tls.Routes[0].SNI = "a.example.com"
	cfg.Frontends = append(cfg.Frontends, tcpListener("gw_default_gw2_9000", 9000, "192.0.2.20", "2001:db8::20"),
		tcpListener("gw_default_gw3_9001", 9001, "192.0.2.21"), tls)
	return cfg
}

func TestGoldenListenerRoutes(t *testing.T) {
	cfg := listenedRoutes()
	layout, _ := plan.Assign(cfg, nil, true)
	o := tproxyOpts()
	got := Config(cfg, layout, o)
	golden.Assert(t, "listener-routes-tproxy.cfg", got)
	routes, backends := ListenerRouteEntries(cfg, o)
	golden.Assert(t, "listeners.routes.map", MapContent(routes))
	golden.Assert(t, "listeners.backends.map", MapContent(backends))
	keys, names := ListenerTLSEntries(cfg, o)
	golden.Assert(t, "listeners.tls.map", MapContent(keys))
	golden.Assert(t, "listeners.sni.map", MapContent(names))
	for _, fe := range []string{"gw_default_gw2_9000", "gw_default_gw3_9001", "gw_default_gw2_443"} {
		if bytes.Contains(got, []byte("frontend "+fe+"\n")) {
			t.Errorf("%s behind the listener has a frontend of its own", fe)
		}
	}
	if l, _ := ListenerEntries(cfg, o); strings.Contains(string(MapContent(l)), ":9000 ") {
		t.Errorf("a routed listener's key in the one-backend map: %s", MapContent(l))
	}

	listenerConfigAccepted(t, cfg, got) // listeners_test.go
}

// TestListenerRoutesStructure: behind the listener, a new gateway TCP
// listener (a new Gateway, a new port), its addresses and its weights are
// map data, not structure; in ports mode a new one is a frontend.
func TestListenerRoutesStructure(t *testing.T) {
	o := tproxyOpts()
	cfg := listened()
	layout, _ := plan.Assign(cfg, nil, true)
	h := StructureHash(cfg, layout, o)
	more := listenedRoutes()
	more.Frontends[len(more.Frontends)-2].Routes[0].Backends[0].Weight = 7
	more.Frontends[len(more.Frontends)-1].Routes[0].SNI = "b.example.com" // the TLS one's name
	if StructureHash(more, layout, o) != h {
		t.Errorf("new TCP listeners behind the fixed listener changed the structure")
	}
	if StructureHash(more, layout, opts) == StructureHash(cfg, layout, opts) {
		t.Errorf("new TCP listeners kept the structure in ports mode")
	}
}

func TestListenerKindOf(t *testing.T) {
	o := tproxyOpts()
	b := func(a string, p uint16) model.Bind { return model.Bind{Addr: ap(a), Port: p} }
	tcp := func(edit func(*model.Frontend)) model.Frontend {
		f := model.Frontend{Name: "fe", Binds: []model.Bind{b("192.0.2.10", 9000)},
			Routes: []model.Route{{Backends: []model.WeightedBackend{{Name: "be", Weight: 1}}}}}
		if edit != nil {
			edit(&f)
		}
		return f
	}
	for _, tc := range []struct {
		name string
		o    Options
		f    model.Frontend
		want ListenerKind
	}{
		{"one backend", o, model.Frontend{Name: "fe", Backend: "be", Binds: []model.Bind{b("192.0.2.10", 80)}}, ListenedBackend},
		{"tcp routes", o, tcp(nil), ListenedTCPRoutes},
		{"tcp routes, both families", o, tcp(func(f *model.Frontend) { f.Binds = append(f.Binds, b("2001:db8::1", 9000)) }), ListenedTCPRoutes},
		{"tcp routes, ports mode", opts, tcp(nil), NotListened},
		{"routed by sni", o, tcp(func(f *model.Frontend) { f.Routes[0].SNI = "a.example.com" }), ListenedTLSRoutes},
		{"routed by sni, its default delay", o, tcp(func(f *model.Frontend) {
			f.Routes[0].SNI, f.InspectDelay = "a.example.com", model.DefaultInspectDelay
		}), ListenedTLSRoutes},
		{"routed by sni, a delay of its own", o, tcp(func(f *model.Frontend) { f.Routes[0].SNI, f.InspectDelay = "a.example.com", time.Second }), NotListened},
		{"routed by sni, proxy protocol", o, tcp(func(f *model.Frontend) { f.Routes[0].SNI, f.AcceptProxy = "a.example.com", true }), NotListened},
		{"routed by sni, ports mode", opts, tcp(func(f *model.Frontend) { f.Routes[0].SNI = "a.example.com" }), NotListened},
		{"terminates tls", o, tcp(func(f *model.Frontend) { f.TLS = &model.TLS{} }), NotListened},
		{"http", o, tcp(func(f *model.Frontend) { f.HTTP = &model.HTTP{} }), NotListened},
		{"every address", o, tcp(func(f *model.Frontend) { f.Binds = []model.Bind{{Port: 9000}} }), NotListened},
		{"loopback", o, tcp(func(f *model.Frontend) { f.Binds = []model.Bind{b("127.0.0.1", 9000)} }), NotListened},
		{"the listener's own port", o, tcp(func(f *model.Frontend) { f.Binds = []model.Bind{b("192.0.2.10", 15080)} }), NotListened},
		{"source ranges", o, tcp(func(f *model.Frontend) { f.SourceRanges = EveryClient }), NotListened},
		{"proxy protocol", o, tcp(func(f *model.Frontend) { f.AcceptProxy = true }), NotListened},
		{"maxconn", o, tcp(func(f *model.Frontend) { f.MaxConn = 10 }), NotListened},
		{"client timeout", o, tcp(func(f *model.Frontend) { f.TimeoutClient = 1 }), NotListened},
	} {
		if got := tc.o.ListenerKindOf(tc.f); got != tc.want {
			t.Errorf("%s: ListenerKindOf = %d, want %d", tc.name, got, tc.want)
		}
		if got := tc.o.Listened(tc.f); got != (tc.want != NotListened) {
			t.Errorf("%s: Listened = %v, want %v", tc.name, got, tc.want != NotListened)
		}
	}
}

// TestListenerRouteEntries: each routed frontend's keys name its id,
// its first route's backends cut [id*pickRange, (id+1)*pickRange) by
// weight, an id kept whatever other frontends come, and a key taken
// once.
func TestListenerRouteEntries(t *testing.T) {
	o := tproxyOpts()
	one := model.Config{Frontends: []model.Frontend{tcpListener("b", 9000, "192.0.2.20")}}
	ids := ListenerRouteIDs(one, o)
	two := model.Config{Frontends: []model.Frontend{tcpListener("a", 9000, "192.0.2.20"), tcpListener("b", 9000, "192.0.2.20", "192.0.2.21")}}
	ids2 := ListenerRouteIDs(two, o)
	if ids["b"] == 0 || ids2["b"] != ids["b"] || ids2["a"] == ids2["b"] {
		t.Fatalf("ids %v then %v: want b's kept and a's its own", ids, ids2)
	}
	routes, backends := ListenerRouteEntries(two, o)
	itoa := func(n int64) string { return strconv.FormatInt(n, 10) }
	id := func(n string) string { return itoa(ids2[n]) }
	wantRoutes := []MapEntry{{"192.0.2.20:9000", id("a")}, {"192.0.2.21:9000", id("b")}}
	if !slices.Equal(routes, wantRoutes) {
		t.Errorf("routes %v, want %v", routes, wantRoutes)
	}
	if len(backends) != 4 {
		t.Fatalf("backends %v, want two ranges per frontend", backends)
	}
	for _, n := range []string{"a", "b"} {
		base := ids2[n] * pickRange
		want := []MapEntry{{itoa(base) + ":" + itoa(base+pickRange*3/4-1), "gw_default_a_80"},
			{itoa(base+pickRange*3/4) + ":" + itoa(base+pickRange-1), "gw_default_b_80"}}
		for _, w := range want {
			if !slices.Contains(backends, w) {
				t.Errorf("%s: backends %v lack %v", n, backends, w)
			}
		}
	}
	if r, b := ListenerRouteEntries(two, opts); r != nil || b != nil {
		t.Errorf("ports mode has route entries %v %v", r, b)
	}
}
