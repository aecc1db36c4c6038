package tproxy

import (
	"maps"
	"net/netip"
	"slices"
	"testing"
	"time"

	"github.com/haproxy-k8s-sync/haproxy-k8s-sync/internal/model"
	"github.com/haproxy-k8s-sync/haproxy-k8s-sync/internal/render"
	"github.com/haproxy-k8s-sync/haproxy-k8s-sync/internal/testing/golden"
	"github.com/haproxy-k8s-sync/haproxy-k8s-sync/internal/testing/netlab"
)

var tproxyOpts = render.Options{ACLDir: "/var/lib/hks/acl", Listeners: render.Listeners{Mode: render.ListenersTProxy, Port: listenPort}}

func TestElements(t *testing.T) {
	b := func(a string, p uint16) model.Bind { return model.Bind{Addr: netip.MustParseAddr(a), Port: p} }
	fe := func(name string, binds ...model.Bind) model.Frontend {
		return model.Frontend{Name: name, Backend: "be_" + name, Binds: binds}
	}
	cfg := model.Config{Frontends: []model.Frontend{
		fe("a", b("203.0.113.10", 80), b("2001:db8:1::10", 80), b("203.0.113.10", 80)),
		fe("b", b("203.0.113.10", 443)),
		// Nothing a Service writes reaches the sets unless the listener
		// can key it: every address, loopback, mapped, compatible,
		// link-local, multicast, the listener's own port.
		fe("any", model.Bind{Port: 8080}),
		fe("lo", b("127.0.0.1", 80)),
		fe("mapped", b("::ffff:203.0.113.12", 80)),
		fe("compat", b("::cb00:710c", 80)),
		fe("ll", b("fe80::1", 80)),
		fe("mc", b("239.1.1.1", 80)),
		fe("own", b("203.0.113.13", listenPort)),
		// A gateway TCP listener is keyed (its routes map), one routed
		// by TLS server name too (the TLS keys map); one waiting a
		// ClientHello longer than the listener does keeps its frontend.
		{Name: "tcp", Binds: []model.Bind{b("203.0.113.14", 443)}, Routes: []model.Route{{Backends: []model.WeightedBackend{{Name: "be_b", Weight: 1}}}}},
		{Name: "sni", Binds: []model.Bind{b("203.0.113.15", 443)}, Routes: []model.Route{{SNI: "a.example.com", Backends: []model.WeightedBackend{{Name: "be_b", Weight: 1}}}}},
		{Name: "slow", Binds: []model.Bind{b("203.0.113.16", 443)}, InspectDelay: time.Minute,
			Routes: []model.Route{{SNI: "a.example.com", Backends: []model.WeightedBackend{{Name: "be_b", Weight: 1}}}}},
	}}
	v4, v6 := Elements(cfg, tproxyOpts)
	want4 := []netip.AddrPort{netip.MustParseAddrPort("203.0.113.10:80"), netip.MustParseAddrPort("203.0.113.10:443"),
		netip.MustParseAddrPort("203.0.113.14:443"), netip.MustParseAddrPort("203.0.113.15:443")}
	want6 := []netip.AddrPort{netip.MustParseAddrPort("[2001:db8:1::10]:80")}
	if !slices.Equal(v4, want4) || !slices.Equal(v6, want6) {
		t.Errorf("Elements = %v %v, want %v %v", v4, v6, want4, want6)
	}
	// The maps have exactly the same keys.
	listen, _ := render.ListenerEntries(cfg, tproxyOpts)
	routes, _ := render.ListenerRouteEntries(cfg, tproxyOpts)
	tls, _ := render.ListenerTLSEntries(cfg, tproxyOpts)
	var keys []string
	for _, e := range slices.Concat(listen, routes, tls) {
		keys = append(keys, e.Key)
	}
	var fromSets []string
	for _, e := range append(v4, v6...) {
		fromSets = append(fromSets, render.ListenerKey(e.Addr(), e.Port()))
	}
	slices.Sort(keys)
	slices.Sort(fromSets)
	if !slices.Equal(keys, fromSets) {
		t.Errorf("map keys %v, set elements %v: they must agree", keys, fromSets)
	}
	if v4, v6 := Elements(cfg, render.Options{ACLDir: "/x"}); v4 != nil || v6 != nil {
		t.Errorf("ports mode has elements %v %v", v4, v6)
	}
	// The driver's set of them (wantSet) holds the same elements, kept
	// by frontend: another model's only changes what changed.
	var w wantSet
	w.update(cfg, nil, tproxyOpts)
	if got := slices.SortedFunc(maps.Keys(w.count), netip.AddrPort.Compare); !slices.Equal(got, append(v4, v6...)) {
		t.Errorf("wanted = %v, want %v", got, append(v4, v6...))
	}
	w.update(model.Config{Frontends: cfg.Frontends[1:]}, nil, tproxyOpts)
	if len(w.count) != 3 || !w.wants(netip.MustParseAddrPort("203.0.113.10:443")) || !w.wants(netip.MustParseAddrPort("203.0.113.14:443")) ||
		!w.wants(netip.MustParseAddrPort("203.0.113.15:443")) {
		t.Errorf("wanted of fewer frontends = %v, want 203.0.113.10:443, 203.0.113.14:443 and 203.0.113.15:443", w.count)
	}
}

func TestGoldenRuleset(t *testing.T) {
	v4 := []netip.AddrPort{netip.MustParseAddrPort("203.0.113.10:80"), netip.MustParseAddrPort("203.0.113.10:443")}
	v6 := []netip.AddrPort{netip.MustParseAddrPort("[2001:db8:1::10]:80")}
	got := Render(listenPort, DefaultMark, v4, v6)
	golden.Assert(t, "tproxy.nft", got)
	netlab.NFTAccepts(t, got)
	netlab.NFTAccepts(t, Render(listenPort, DefaultMark, nil, nil))
	// With the fixed HTTP listener's sets (httpsets.go).
	h4 := []netip.AddrPort{netip.MustParseAddrPort("203.0.113.11:8080")}
	withHTTP := RenderSets(DefaultMark, ListenerSets{Port: listenPort, V4: v4, V6: v6}, &ListenerSets{Port: render.DefaultHTTPListenerPort, V4: h4}, nil)
	golden.Assert(t, "tproxy-http.nft", withHTTP)
	netlab.NFTAccepts(t, withHTTP)
	// And the fixed HTTPS listener's (httpssets.go).
	s6 := []netip.AddrPort{netip.MustParseAddrPort("[2001:db8:1::11]:443")}
	withHTTPS := RenderSets(DefaultMark, ListenerSets{Port: listenPort, V4: v4, V6: v6}, &ListenerSets{Port: render.DefaultHTTPListenerPort, V4: h4},
		&ListenerSets{Port: render.DefaultHTTPSListenerPort, V6: s6})
	golden.Assert(t, "tproxy-https.nft", withHTTPS)
	netlab.NFTAccepts(t, withHTTPS)
}

func TestKeyRoundTrip(t *testing.T) {
	for _, s := range []string{"203.0.113.10:80", "[2001:db8:1::10]:65535"} {
		ap := netip.MustParseAddrPort(s)
		if got, ok := parseKey(key(ap)); !ok || got != ap {
			t.Errorf("parseKey(key(%s)) = %v, %v", ap, got, ok)
		}
	}
}
