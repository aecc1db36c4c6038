package render

import (
	"strings"
	"testing"

	"github.com/haproxy-k8s-sync/haproxy-k8s-sync/internal/model"
	"github.com/haproxy-k8s-sync/haproxy-k8s-sync/internal/plan"
)

// httpRouted is an HTTP listener's table: an exact host and a wildcard,
// Exact and PathPrefix paths, a header match, a 70/30 split with a share
// refused, header changes and a redirect.
func httpRouted() model.Config {
	srv := func(a string, port uint16) []model.Server { return []model.Server{{Addr: ap(a), Port: port}} }
	h := model.Shaped(&model.HTTP{Port: 8080,
		Hosts: []model.HTTPHost{
			{Name: "a.example.com", Rules: []model.HTTPRule{
				{PathType: model.PathExact, Path: "/exact", Action: 0},
				{PathType: model.PathPrefix, Path: "/v2/", Headers: []model.HeaderMatch{{Name: "version", Value: "two"}}, Action: 1},
				{PathType: model.PathPrefix, Path: "/v2", Action: 2},
				{PathType: model.PathPrefix, Path: "/", Action: 3},
			}},
			{Name: "*.example.com", Rules: []model.HTTPRule{{PathType: model.PathPrefix, Path: "/", Action: 4}}},
			{Name: model.AnyHost, Rules: []model.HTTPRule{{PathType: model.PathPrefix, Path: "/", Action: 2}}},
		},
		Actions: []model.HTTPAction{
			{Backends: []model.WeightedBackend{{Name: "gwh_default_a_80", Weight: 1}}},
			{Backends: []model.WeightedBackend{{Name: "gwh_default_b_80", Weight: 1}}, Set: []model.HeaderValue{{Name: "x-set", Value: "one"}},
				Add: []model.HeaderValue{{Name: "x-add", Value: "two"}}, Remove: []string{"x-remove"}},
			{Backends: []model.WeightedBackend{{Name: "gwh_default_a_80", Weight: 70}, {Name: "gwh_default_b_80", Weight: 25}, {Name: model.RejectBackend, Weight: 5}}},
			{Redirect: &model.Redirect{Scheme: "https", Host: "example.org", Code: 301}},
			{},
		}})
	return model.Config{
		Frontends: []model.Frontend{{Name: "gw_default_gw_8080", Service: "default/gw", Binds: []model.Bind{{Addr: ap("127.0.0.1"), Port: 18080}}, HTTP: h}},
		Backends: []*model.Backend{
			{Name: model.RejectBackend, Balance: "roundrobin", Servers: []model.Server{}},
			{Name: "gwh_default_a_80", Service: "default/a", Balance: "roundrobin", HTTP: true, Servers: srv("10.244.0.5", 8080)},
			{Name: "gwh_default_b_80", Service: "default/b", Balance: "roundrobin", HTTP: true, Servers: srv("10.244.1.7", 8080)},
		},
	}
}

func TestGoldenHTTP(t *testing.T) {
	assertHTTPGolden(t, httpRouted(), "http.cfg", "http-maps.txt") // httpext_test.go
}

// httpStructure gives the structure hash of cfg() after a change to its
// first frontend's table.
func httpStructure(cfg func() model.Config) func(change func(h *model.HTTP)) string {
	withDir := opts
	withDir.ACLDir = goldenACLDir
	return func(change func(h *model.HTTP)) string {
		c := cfg()
		change(c.Frontends[0].HTTP)
		model.Shaped(c.Frontends[0].HTTP) // as its producer would
		layout, _ := plan.Assign(c, nil, true)
		return StructureHash(c, layout, withDir)
	}
}

// The table is data: rules, hosts, weights and actions changed keep the
// structure; a header name matched or changed, or TLS, does not.
func TestHTTPStructure(t *testing.T) {
	hash := httpStructure(httpRouted)
	base := hash(func(*model.HTTP) {})
	for _, tc := range []struct {
		name   string
		change func(h *model.HTTP)
		same   bool
	}{
		{"a host added", func(h *model.HTTP) { h.Hosts = append(h.Hosts, model.HTTPHost{Name: "c.example.com"}) }, true},
		{"a one-label wildcard added", func(h *model.HTTP) {
			h.Hosts = append(h.Hosts, model.HTTPHost{Name: model.OneLabelPrefix + "example.com", Rules: h.Hosts[1].Rules})
		}, true},
		{"a path changed", func(h *model.HTTP) { h.Hosts[0].Rules[0].Path = "/other" }, true},
		{"a weight changed", func(h *model.HTTP) { h.Actions[2].Backends[0].Weight = 1 }, true},
		{"a header value changed", func(h *model.HTTP) { h.Hosts[0].Rules[1].Headers[0].Value = "three" }, true},
		{"a redirect added", func(h *model.HTTP) {
			h.Actions[0] = model.HTTPAction{Redirect: &model.Redirect{Scheme: "http", Code: 302}}
		}, true},
		{"a header name matched", func(h *model.HTTP) { h.Hosts[0].Rules[1].Headers[0].Name = "other" }, false},
		{"a header name set", func(h *model.HTTP) { h.Actions[1].Set[0].Name = "x-other" }, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := hash(tc.change) == base; got != tc.same {
				t.Fatalf("same structure: %v, want %v", got, tc.same)
			}
		})
	}
}

func TestDecimalPrefixes(t *testing.T) {
	for _, tc := range []struct {
		lo, hi int64
		want   string
	}{
		{10000, 19999, "1"},
		{10000, 14999, "10 11 12 13 14"},
		{15000, 19999, "15 16 17 18 19"},
		{10000, 16999, "10 11 12 13 14 15 16"},
		{17000, 19499, "17 18 190 191 192 193 194"},
		{19500, 19999, "195 196 197 198 199"},
		{13333, 13340, "13333 13334 13335 13336 13337 13338 13339 13340"},
		{10000, 10000, "10000"},
		{12, 11, ""},
	} {
		if got := strings.Join(decimalPrefixes(tc.lo, tc.hi), " "); got != tc.want {
			t.Errorf("%d..%d: got %q, want %q", tc.lo, tc.hi, got, tc.want)
		}
	}
}

// TestHTTPMapsRefuseSyntax: text that is not valid never reaches a map:
// a rule, host, header change or redirect carrying it is left out.
func TestHTTPMapsRefuseSyntax(t *testing.T) {
	bad := []string{"/a b", "/a\nb", "/a#b", "/a;b", "/a\\b", "a|b", "a%b", "a b", "a\x01b", "a.example.com }"}
	for _, s := range bad {
		t.Run(s, func(t *testing.T) {
			h := model.Shaped(&model.HTTP{Hosts: []model.HTTPHost{{Name: s, Rules: []model.HTTPRule{{PathType: model.PathPrefix, Path: "/", Action: 0}}},
				{Name: "ok.example.com", Rules: []model.HTTPRule{
					{PathType: model.PathExact, Path: s, Action: 0},
					{PathType: model.PathExact, Path: "/h", Headers: []model.HeaderMatch{{Name: s, Value: "v"}}, Action: 0},
					{PathType: model.PathExact, Path: "/v", Headers: []model.HeaderMatch{{Name: "n", Value: s}}, Action: 0},
				}}},
				Actions: []model.HTTPAction{{Set: []model.HeaderValue{{Name: "x", Value: s}, {Name: s, Value: "v"}}, Remove: []string{s},
					Backends: []model.WeightedBackend{{Name: "be", Weight: 1}}},
					{Redirect: &model.Redirect{Scheme: "http", Host: s, Code: 302}}}})
			for kind, es := range HTTPMaps(h) {
				for _, e := range es {
					if kind == HTTPHeaders && e.Value == s && model.ValidHeaderSetValue(s) {
						continue // a header's value may hold spaces and ';' (a map value only)
					}
					if strings.Contains(e.Key, s) || strings.Contains(e.Value, s) {
						t.Errorf("%s map holds %q: %q %q", kind, s, e.Key, e.Value)
					}
				}
			}
		})
	}
}

// A one-label wildcard (an Ingress's "*.foo.com", "+.foo.com" in the
// table) is an entry of the onelabel map keyed by its suffix, never of
// the hosts map, which keeps the exact names and the Gateways' "*."
// wildcards; without one the onelabel map is empty, so the rule that
// reads it costs a lookup in an empty map.
func TestHTTPOneLabelMap(t *testing.T) {
	rule := []model.HTTPRule{{PathType: model.PathPrefix, Path: "/", Action: 0}}
	act := []model.HTTPAction{{Backends: []model.WeightedBackend{{Name: "b", Weight: 1}}}}
	for _, tc := range []struct {
		name            string
		hosts           []string
		onelabel, exact []string // the keys of each map
	}{
		{"no one-label wildcard", []string{"a.foo.com", "*.foo.com", model.AnyHost}, nil, []string{"a.foo.com", "*.foo.com", model.AnyHost}},
		{"one beside a Gateway's wildcard of the same suffix", []string{"a.foo.com", "+.foo.com", "*.foo.com", "+.bar.com"},
			[]string{"foo.com", "bar.com"}, []string{"a.foo.com", "*.foo.com"}},
	} {
		h := &model.HTTP{Port: 80, Actions: act}
		for _, n := range tc.hosts {
			h.Hosts = append(h.Hosts, model.HTTPHost{Name: n, Rules: rule})
		}
		maps := HTTPMaps(model.Shaped(h))
		keys := func(kind string) []string {
			var out []string
			for _, e := range maps[kind] {
				out = append(out, e.Key)
			}
			return out
		}
		if got := keys(HTTPOneLabel); strings.Join(got, " ") != strings.Join(tc.onelabel, " ") {
			t.Errorf("%s: onelabel map keys %q, want %q", tc.name, got, tc.onelabel)
		}
		if got := keys(HTTPHosts); strings.Join(got, " ") != strings.Join(tc.exact, " ") {
			t.Errorf("%s: hosts map keys %q, want %q", tc.name, got, tc.exact)
		}
	}
	o := opts
	o.ACLDir = goldenACLDir
	text := string(Config(httpRouted(), nil, o))
	if want := "var(txn.host),field(2,.,0),map_str("; !strings.Contains(text, want) || strings.Contains(text, `"+.%[`) {
		t.Errorf("the one-label rule does not look the suffix up in its own map:\n%s", text)
	}
}
