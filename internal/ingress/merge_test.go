package ingress

import (
	"bytes"
	"net/netip"
	"testing"

	"github.com/haproxy-k8s-sync/haproxy-k8s-sync/internal/model"
	"github.com/haproxy-k8s-sync/haproxy-k8s-sync/internal/testing/golden"
)

// TestMerge: an Ingress frontend with a Gateway HTTP frontend's very
// binds shares its table (HTTPRoutes first, then the Ingresses of that
// host or their catch-all); with other binds it stays a frontend of its
// own; backends are not added twice.
func TestMerge(t *testing.T) {
	res := Compile(load(t, "basic"), Options{Class: "haproxy", Addresses: lb})
	gwBackend := &model.Backend{Name: "gwh_default_web_80", HTTP: true}
	gwTable := model.Shaped(&model.HTTP{Port: 80,
		Hosts: []model.HTTPHost{
			{Name: "shop.example.com", Rules: []model.HTTPRule{{PathType: model.PathPrefix, Path: "/api", Action: 0}}},
			{Name: "gw.example.com", Rules: []model.HTTPRule{{PathType: model.PathPrefix, Path: "/", Action: 0}}},
		},
		Actions: []model.HTTPAction{{Backends: []model.WeightedBackend{{Name: gwBackend.Name, Weight: 1}}}}})
	shared := model.Config{
		Frontends: []model.Frontend{{Name: "gw_default_gw_80", Binds: []model.Bind{{Addr: netip.MustParseAddr("127.0.0.1"), Port: 80}}, HTTP: gwTable}},
		Backends:  []*model.Backend{gwBackend, {Name: model.RejectBackend}},
	}
	Merge(&shared, res)
	if h := shared.Frontends[0].HTTP; !h.KeptShape().Equal(model.ShapeOf(h)) {
		t.Errorf("the merged table's Shape %+v, of its table %+v", *h.KeptShape(), model.ShapeOf(h))
	}
	var b bytes.Buffer
	for _, f := range shared.Frontends {
		b.WriteString("frontend " + f.Name + "\n")
		dumpHTTP(&b, f.HTTP)
	}
	for _, be := range shared.Backends {
		b.WriteString("backend " + be.Name + "\n")
	}
	golden.Assert(t, "merge-shared.golden", b.Bytes())

	// A TCP listener on the Ingresses' port keeps it.
	tcp := model.Config{Frontends: []model.Frontend{{Name: "gw_default_gw_80", Binds: []model.Bind{{Port: 80}}, Backend: "x"}}}
	if c := Merge(&tcp, res); len(c) != 1 || len(tcp.Frontends) != 1 || tcp.Frontends[0].Name != "gw_default_gw_80" {
		t.Errorf("beside a TCP listener on port 80: conflicts %v, frontends %+v", c, tcp.Frontends)
	}

	apart := model.Config{Frontends: []model.Frontend{{Name: "gw_default_gw_8080", Binds: []model.Bind{{Addr: netip.MustParseAddr("127.0.0.1"), Port: 8080}}, HTTP: gwTable}}}
	Merge(&apart, res)
	if len(apart.Frontends) != 2 || apart.Frontends[1].Name != HTTPFrontend || !apart.Frontends[1].HTTP.Equal(res.Frontends[0].HTTP) {
		t.Errorf("on another port: %+v", apart.Frontends)
	}
}

// TestCovers: which table host serves a name the table does not list; a
// one-label wildcard ("+.", an Ingress's "*.") covers one label only.
func TestCovers(t *testing.T) {
	for _, c := range []struct {
		h, n string
		want bool
	}{
		{model.AnyHost, "a.foo.com", true},
		{"*.foo.com", "a.foo.com", true},
		{"*.foo.com", "a.b.foo.com", true},
		{"*.foo.com", "+.foo.com", true},
		{"*.foo.com", "foo.com", false},
		{"+.foo.com", "a.foo.com", true},
		{"+.foo.com", "a.b.foo.com", false},
		{"+.foo.com", "foo.com", false},
		{"+.foo.com", "*.foo.com", false},
		{"a.foo.com", "a.foo.com", false}, // not a host the table lists
		{"*.foo.com", model.AnyHost, false},
	} {
		if got := covers(c.h, c.n); got != c.want {
			t.Errorf("covers(%q, %q) = %v, want %v", c.h, c.n, got, c.want)
		}
	}
}
