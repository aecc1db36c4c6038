package render

import (
	"bytes"
	"strings"
	"testing"
	"time"

	"github.com/haproxy-k8s-sync/haproxy-k8s-sync/internal/model"
	"github.com/haproxy-k8s-sync/haproxy-k8s-sync/internal/plan"
	"github.com/haproxy-k8s-sync/haproxy-k8s-sync/internal/testing/golden"
)

// httpExt is an HTTP table with every extended feature: query parameter
// matches, response header changes, a backend's own header changes,
// path (whole and prefix) and host rewrites, a redirect's path and a
// timeout.
func httpExt() model.Config {
	cfg := httpRouted()
	h := model.Shaped(&model.HTTP{Port: 8080,
		Hosts: []model.HTTPHost{{Name: model.AnyHost, Rules: []model.HTTPRule{
			{PathType: model.PathPrefix, Path: "/q", Query: []model.HeaderMatch{{Name: "animal", Value: "whale"}, {Name: "Color", Value: "blue"}}, Action: 0},
			{PathType: model.PathPrefix, Path: "/prefix/one", Action: 1},
			{PathType: model.PathPrefix, Path: "/full", Action: 2},
			{PathType: model.PathPrefix, Path: "/moved", Action: 3},
			{PathType: model.PathPrefix, Path: "/", Headers: []model.HeaderMatch{{Name: "version", Value: "two"}}, Query: []model.HeaderMatch{{Name: "animal", Value: "shark"}}, Action: 4},
		}}},
		Actions: []model.HTTPAction{
			{Backends: []model.WeightedBackend{{Name: "gwh_default_a_80", Weight: 1}, {Name: "gwh_default_b_80", Weight: 1}},
				Ext: &model.HTTPActionExt{BackendMods: []model.HeaderMods{{Set: []model.HeaderValue{{Name: "backend", Value: "a"}}}, {Remove: []string{"x-gone"}}}}},
			{Backends: []model.WeightedBackend{{Name: "gwh_default_a_80", Weight: 1}},
				Ext: &model.HTTPActionExt{Path: &model.PathRewrite{Replace: "/one/", Prefix: true, Strip: 2}, Host: "rewritten.example.com", Timeout: 500 * time.Millisecond}},
			{Backends: []model.WeightedBackend{{Name: "gwh_default_b_80", Weight: 1}},
				Ext: &model.HTTPActionExt{Path: &model.PathRewrite{Replace: "/one"}, Response: model.HeaderMods{
					Set: []model.HeaderValue{{Name: "x-header-set", Value: "s"}}, Add: []model.HeaderValue{{Name: "x-header-add", Value: "a"}}, Remove: []string{"server"}}}},
			{Redirect: &model.Redirect{Scheme: "http", Code: 302}, Ext: &model.HTTPActionExt{Path: &model.PathRewrite{Replace: "/", Prefix: true, Strip: 1}}},
			{Backends: []model.WeightedBackend{{Name: "gwh_default_a_80", Weight: 1}}},
		}})
	cfg.Frontends[0].HTTP = h
	cfg.Backends[2].H2C = true // gwh_default_b_80: HTTP/2 in clear to its servers
	return cfg
}

func TestGoldenHTTPExt(t *testing.T) {
	assertHTTPGolden(t, httpExt(), "httpext.cfg", "httpext-maps.txt")
}

// assertHTTPGolden checks cfg's rendering and its first frontend's maps
// against golden files, and that HAProxy accepts it with those maps.
func assertHTTPGolden(t *testing.T, cfg model.Config, cfgFile, mapsFile string) {
	t.Helper()
	layout, _ := plan.Assign(cfg, nil, true)
	withDir := opts
	withDir.ACLDir = goldenACLDir
	got := Config(cfg, layout, withDir)
	golden.Assert(t, cfgFile, got)
	var maps bytes.Buffer
	dir := t.TempDir()
	writeHTTPMapFiles(t, dir, cfg.Frontends[0]) // passthrough_test.go
	m := HTTPMaps(cfg.Frontends[0].HTTP)
	for _, kind := range HTTPMapKinds {
		maps.WriteString("# " + HTTPMapFile(goldenACLDir, cfg.Frontends[0].Name, kind) + "\n")
		maps.Write(HTTPMapContent(m[kind]))
	}
	golden.Assert(t, mapsFile, maps.Bytes())
	golden.HAProxyAccepts(t, bytes.ReplaceAll(got, []byte(goldenACLDir), []byte(dir)))
}

// The extended features are data: a rewrite, a timeout, a query value
// or a backend's header value changed keep the structure; a response
// header name or a query parameter name does not.
func TestHTTPExtStructure(t *testing.T) {
	hash := httpStructure(httpExt)
	base := hash(func(*model.HTTP) {})
	for _, tc := range []struct {
		name   string
		change func(h *model.HTTP)
		same   bool
	}{
		{"a prefix rewrite changed", func(h *model.HTTP) { h.Actions[1].Ext.Path = &model.PathRewrite{Replace: "/x", Prefix: true, Strip: 7} }, true},
		{"a rewrite removed", func(h *model.HTTP) { h.Actions[2].Ext.Path = nil }, true},
		{"a timeout changed", func(h *model.HTTP) { h.Actions[1].Ext.Timeout = time.Minute }, true},
		{"a host rewrite added", func(h *model.HTTP) { h.Actions[4].Ext = &model.HTTPActionExt{Host: "b.example.com"} }, true},
		{"a query value changed", func(h *model.HTTP) { h.Hosts[0].Rules[0].Query[0].Value = "dolphin" }, true},
		{"a backend's header value changed", func(h *model.HTTP) { h.Actions[0].Ext.BackendMods[0].Set[0].Value = "b" }, true},
		{"a response header value changed", func(h *model.HTTP) { h.Actions[2].Ext.Response.Set[0].Value = "t" }, true},
		{"a query name matched", func(h *model.HTTP) { h.Hosts[0].Rules[0].Query[0].Name = "other" }, false},
		{"a response header name set", func(h *model.HTTP) { h.Actions[2].Ext.Response.Set[0].Name = "x-other" }, false},
		{"a backend's header name set", func(h *model.HTTP) { h.Actions[0].Ext.BackendMods[0].Set[0].Name = "x-other" }, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := hash(tc.change) == base; got != tc.same {
				t.Fatalf("same structure: %v, want %v", got, tc.same)
			}
		})
	}
}

// TestHTTPExtRefuseSyntax: text that is not valid never reaches a map or
// the configuration through the extended features.
func TestHTTPExtRefuseSyntax(t *testing.T) {
	bad := []string{"/a b", "/a\nb", "/a#b", "/a;b", "/a\\b", "a|b", "a%b", "a b", "a\x01b", "a.example.com }"}
	for _, s := range bad {
		t.Run(s, func(t *testing.T) {
			mods := model.HeaderMods{Set: []model.HeaderValue{{Name: "x", Value: s}, {Name: s, Value: "v"}}, Remove: []string{s}}
			h := model.Shaped(&model.HTTP{Hosts: []model.HTTPHost{{Name: "ok.example.com", Rules: []model.HTTPRule{
				{PathType: model.PathExact, Path: "/q", Query: []model.HeaderMatch{{Name: s, Value: "v"}}, Action: 0},
				{PathType: model.PathExact, Path: "/v", Query: []model.HeaderMatch{{Name: "n", Value: s}}, Action: 0},
			}}},
				Actions: []model.HTTPAction{{Backends: []model.WeightedBackend{{Name: "be", Weight: 1}},
					Ext: &model.HTTPActionExt{Response: mods, BackendMods: []model.HeaderMods{mods}, Path: &model.PathRewrite{Replace: s}, Host: s}},
					{Redirect: &model.Redirect{Scheme: "http", Code: 302}, Ext: &model.HTTPActionExt{Path: &model.PathRewrite{Replace: s, Prefix: true}}}}})
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
			cfg := httpExt()
			cfg.Frontends[0].HTTP = h
			layout, _ := plan.Assign(cfg, nil, true)
			withDir := opts
			withDir.ACLDir = goldenACLDir
			if got := Config(cfg, layout, withDir); bytes.Contains(got, []byte(s)) {
				t.Errorf("the configuration holds %q", s)
			}
		})
	}
}

// TestHTTPExtRefuseNames: a query parameter's or header's name that
// would end an argument of the configuration (a fine value in a map)
// never reaches it.
func TestHTTPExtRefuseNames(t *testing.T) {
	for _, s := range []string{"a)b", "a,b", "a(b", "a\"b"} {
		mods := model.HeaderMods{Set: []model.HeaderValue{{Name: s, Value: "v"}}}
		cfg := httpExt()
		cfg.Frontends[0].HTTP = model.Shaped(&model.HTTP{Hosts: []model.HTTPHost{{Name: "ok.example.com", Rules: []model.HTTPRule{
			{PathType: model.PathExact, Path: "/q", Query: []model.HeaderMatch{{Name: s, Value: "v"}}, Action: 0}}}},
			Actions: []model.HTTPAction{{Backends: []model.WeightedBackend{{Name: "be", Weight: 1}},
				Ext: &model.HTTPActionExt{Response: mods, BackendMods: []model.HeaderMods{mods}}}}})
		layout, _ := plan.Assign(cfg, nil, true)
		withDir := opts
		withDir.ACLDir = goldenACLDir
		if got := Config(cfg, layout, withDir); bytes.Contains(got, []byte(s)) {
			t.Errorf("the configuration holds %q", s)
		}
		for kind, es := range HTTPMaps(cfg.Frontends[0].HTTP) {
			for _, e := range es {
				if strings.Contains(e.Key, s) {
					t.Errorf("%s map holds %q: %q %q", kind, s, e.Key, e.Value)
				}
			}
		}
	}
}

// TestMisdirectedRules: a TLS frontend answers 421 by its listeners map
// (each listener hostname, a bad one left out); a clear one has neither.
func TestMisdirectedRules(t *testing.T) {
	withDir := opts
	withDir.ACLDir = goldenACLDir
	for _, tls := range []bool{false, true} {
		cfg := httpExt()
		cfg.Frontends[0].HTTP.Listeners = []string{"second-example.org", "*.wildcard.org", "bad name", model.AnyHost}
		if tls {
			cfg.Frontends[0].TLS = &model.TLS{}
		}
		layout, _ := plan.Assign(cfg, nil, true)
		got := string(Config(cfg, layout, withDir))
		if n := strings.Count(got, "return status 421 if { var(txn.ls)"); (n == 2) != tls { // hostauth.go has a third
			t.Errorf("TLS %v: %d rules answering 421", tls, n)
		}
		if strings.Contains(got, "bad name") {
			t.Errorf("TLS %v: the configuration holds a bad listener hostname", tls)
		}
	}
	var entries []string
	for _, e := range HTTPMaps(model.Shaped(&model.HTTP{Listeners: []string{"second-example.org", "*.wildcard.org", "bad name", model.AnyHost}}))[HTTPListeners] {
		entries = append(entries, e.Key+" "+e.Value)
	}
	if got, want := strings.Join(entries, ","), "second-example.org l0,*.wildcard.org l1,* l3"; got != want {
		t.Errorf("listeners map %q, want %q", got, want)
	}
}
