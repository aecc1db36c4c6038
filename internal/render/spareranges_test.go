package render

import (
	"net/netip"
	"slices"
	"strings"
	"testing"

	"github.com/haproxy-k8s-sync/haproxy-k8s-sync/internal/model"
)

// TestSpareSources: what each spare's two files hold behind the fixed
// listener, by who occupies it and with what ranges.
func TestSpareSources(t *testing.T) {
	o := tproxyOpts()
	b := func(a string, p uint16) model.Bind { return model.Bind{Addr: ap(a), Port: p, Transparent: true} }
	fe := func(name, backend string, ranges []string, binds ...model.Bind) model.Frontend {
		f := model.Frontend{Name: name, Service: "default/" + name, Backend: backend, Binds: binds}
		for _, r := range ranges {
			f.SourceRanges = append(f.SourceRanges, netip.MustParsePrefix(r))
		}
		return f
	}
	spare := &model.Backend{Name: "_pool_3", Balance: "roundrobin", SourceChecked: true}
	unchecked := &model.Backend{Name: "_pool_4", Balance: "roundrobin"}
	own := &model.Backend{Name: "be_own", Balance: "roundrobin"}
	cfgOf := func(fs ...model.Frontend) model.Config {
		return model.Config{Frontends: fs, Backends: []*model.Backend{own, spare, unchecked}}
	}
	routed := model.Frontend{Name: "gw", Binds: []model.Bind{b("192.0.2.10", 443)},
		Routes: []model.Route{{Backends: []model.WeightedBackend{{Name: "_pool_3", Weight: 1}}}}}
	httpFE := model.Frontend{Name: "gwh", Binds: []model.Bind{b("192.0.2.10", 8080)},
		HTTP: model.Shaped(&model.HTTP{Port: 8080, Actions: []model.HTTPAction{{Backends: []model.WeightedBackend{{Name: "_pool_3", Weight: 1}}}}})}
	// A table whose only use of the spare is its external authentication,
	// or a TLS passthrough route (model.HTTP.BackendNames): the spare is
	// not free.
	extAuthFE := model.Frontend{Name: "gwa", Binds: []model.Bind{b("192.0.2.10", 8081)},
		HTTP: model.Shaped(&model.HTTP{Port: 8081, Actions: []model.HTTPAction{{Backends: []model.WeightedBackend{{Name: "be_own", Weight: 1}},
			Access: &model.HTTPAccess{ExtAuth: &model.ExtAuth{URL: "http://auth.default.svc/", Backend: "_pool_3"}}}}})}
	passFE := model.Frontend{Name: "gwp", Binds: []model.Bind{b("192.0.2.10", 8443)},
		HTTP: model.Shaped(&model.HTTP{Port: 8443, Passthrough: &model.Passthrough{Routes: []model.PassRoute{{SNI: "a.example.com", Backend: "_pool_3"}}}})}
	for _, tc := range []struct {
		name   string
		o      Options
		cfg    model.Config
		v4, v6 []string // the spare's files; nil: no files at all
	}{
		{"free", o, cfgOf(), []string{NoClient4}, []string{NoClient6}},
		{"unrestricted occupant", o, cfgOf(fe("a", "_pool_3", nil, b("192.0.2.10", 80))),
			[]string{"0.0.0.0/0"}, []string{"::/0"}},
		{"restricted occupant", o, cfgOf(fe("a", "_pool_3", []string{"198.51.100.0/24", "2001:db8::/64"}, b("192.0.2.10", 80))),
			[]string{"198.51.100.0/24"}, []string{"2001:db8::/64"}},
		{"IPv4 ranges only", o, cfgOf(fe("a", "_pool_3", []string{"198.51.100.0/24"}, b("192.0.2.10", 80))),
			[]string{"198.51.100.0/24"}, []string{NoClient6}},
		{"two frontends: both rules", o, cfgOf(
			fe("a", "_pool_3", []string{"198.51.100.0/24", "203.0.113.0/24"}, b("192.0.2.10", 80)),
			fe("a2", "_pool_3", []string{"198.51.100.128/25", "192.0.2.0/24"}, b("192.0.2.10", 81))),
			[]string{"198.51.100.128/25"}, []string{NoClient6}},
		{"two frontends, one unrestricted", o, cfgOf(
			fe("a", "_pool_3", []string{"198.51.100.0/24"}, b("192.0.2.10", 80)),
			fe("a2", "_pool_3", nil, b("192.0.2.10", 81))),
			[]string{"198.51.100.0/24"}, []string{NoClient6}},
		{"disjoint ranges", o, cfgOf(
			fe("a", "_pool_3", []string{"198.51.100.0/24"}, b("192.0.2.10", 80)),
			fe("a2", "_pool_3", []string{"203.0.113.0/24"}, b("192.0.2.10", 81))),
			[]string{NoClient4}, []string{NoClient6}},
		{"only a frontend of its own (every address)", o, cfgOf(fe("a", "_pool_3", []string{"198.51.100.0/24"}, model.Bind{Port: 80})),
			[]string{"0.0.0.0/0"}, []string{"::/0"}},
		{"only a route", o, cfgOf(routed), []string{"0.0.0.0/0"}, []string{"::/0"}},
		{"only an HTTP table", o, cfgOf(httpFE), []string{"0.0.0.0/0"}, []string{"::/0"}},
		{"only an external authentication", o, cfgOf(extAuthFE), []string{"0.0.0.0/0"}, []string{"::/0"}},
		{"only a TLS passthrough route", o, cfgOf(passFE), []string{"0.0.0.0/0"}, []string{"::/0"}},
		{"ports mode", opts, cfgOf(fe("a", "_pool_3", []string{"198.51.100.0/24"}, b("192.0.2.10", 80))), nil, nil},
		{"no spare checks sources", o, model.Config{Frontends: []model.Frontend{fe("a", "_pool_4", nil, b("192.0.2.10", 80))},
			Backends: []*model.Backend{own, unchecked}}, nil, nil},
	} {
		got := SpareSources(tc.cfg, tc.o)
		if tc.v4 == nil {
			if got != nil {
				t.Errorf("%s: spare sources %v, want none", tc.name, got)
			}
			continue
		}
		if len(got) != 1 || got[0].Name != "_pool_3" {
			t.Errorf("%s: spare sources %v, want _pool_3's only", tc.name, got)
			continue
		}
		if l := ACLLines(got[0], false); !slices.Equal(l, tc.v4) {
			t.Errorf("%s: IPv4 file %v, want %v", tc.name, l, tc.v4)
		}
		if l := ACLLines(got[0], true); !slices.Equal(l, tc.v6) {
			t.Errorf("%s: IPv6 file %v, want %v", tc.name, l, tc.v6)
		}
	}
}

// TestSpareRule: in tproxy mode a spare of a class that checks sources
// has one rule reading its own files, whoever occupies it, and its
// occupant's frontend has none of its own; a spare of a class that does
// not has neither rule nor files (HAProxy's cost of a pattern file grows
// with their number), and a restricted frontend sent to one anyway keeps
// its own rule there (never a client let in); ports mode and a backend
// that is no spare are as before.
func TestSpareRule(t *testing.T) {
	o := tproxyOpts()
	f := model.Frontend{Name: "fe_a", Service: "default/a", Backend: "_pool_0",
		Binds:        []model.Bind{{Addr: ap("192.0.2.10"), Port: 80, Transparent: true}},
		SourceRanges: []netip.Prefix{netip.MustParsePrefix("198.51.100.0/24")}}
	fb := f
	fb.Name, fb.Service, fb.Backend = "fe_b", "default/b", "_pool_2"
	cfg := model.Config{Frontends: []model.Frontend{f, fb}, Backends: []*model.Backend{
		{Name: "_pool_0", Balance: "roundrobin", SourceChecked: true}, {Name: "_pool_1", Balance: "roundrobin", SourceChecked: true},
		{Name: "_pool_2", Balance: "roundrobin"}, {Name: "_pool_3", Balance: "roundrobin"}}}
	got := string(Config(cfg, model.Layout{}, o))
	rule := func(owner string) string {
		return "reject unless " + SourceCondition(SrcFileTest(ACLFile(o.ACLDir, owner, false)), SrcFileTest(ACLFile(o.ACLDir, owner, true)))
	}
	for _, want := range []string{rule("_pool_0"), rule("_pool_1"), rule("fe_b")} {
		if strings.Count(got, want) != 1 {
			t.Errorf("want once: %s\n%s", want, got)
		}
	}
	for _, not := range []string{ACLFileName("fe_a", false), ACLFileName("_pool_2", false), ACLFileName("_pool_3", false)} {
		if strings.Contains(got, not) {
			t.Errorf("%s is read:\n%s", not, got)
		}
	}
	if srcs := SpareSources(cfg, o); len(srcs) != 2 || srcs[0].Name != "_pool_0" || srcs[1].Name != "_pool_1" {
		t.Errorf("spare sources %v, want _pool_0's and _pool_1's", srcs)
	}
	if strings.Contains(string(Config(cfg, model.Layout{}, opts)), "_pool_0"+ACLFamily[0]) {
		t.Errorf("a spare reads files of its own in ports mode")
	}
	if o.SpareRanged(&model.Backend{Name: "be_a", SourceChecked: true}) || o.SpareRanged(&model.Backend{Name: "_pool_01", SourceChecked: true}) ||
		opts.SpareRanged(&model.Backend{Name: "_pool_0", SourceChecked: true}) || o.SpareRanged(&model.Backend{Name: "_pool_0"}) {
		t.Errorf("SpareRanged holds for what is no spare that checks sources in tproxy mode")
	}
}
