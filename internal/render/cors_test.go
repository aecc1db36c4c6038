package render

import (
	"strings"
	"testing"

	"github.com/haproxy-k8s-sync/haproxy-k8s-sync/internal/model"
)

// httpCORS is an HTTP table whose actions have CORS policies: exact and
// wildcard origins with every header, any origin with wildcards, and an
// action without a policy.
func httpCORS() model.Config {
	cfg := httpRouted()
	be := []model.WeightedBackend{{Name: "gwh_default_a_80", Weight: 1}}
	h := model.Shaped(&model.HTTP{Port: 8080,
		Hosts: []model.HTTPHost{{Name: model.AnyHost, Rules: []model.HTTPRule{
			{PathType: model.PathPrefix, Path: "/cors-1", Action: 0},
			{PathType: model.PathPrefix, Path: "/cors-any", Action: 1},
			{PathType: model.PathPrefix, Path: "/", Action: 2},
		}}},
		Actions: []model.HTTPAction{
			{Backends: be, Ext: &model.HTTPActionExt{CORS: &model.CORS{
				Origins: []string{"https://www.foo.com", "https://*.bar.com"}, Credentials: true,
				Methods: []string{"GET", "OPTIONS"}, Headers: []string{"x-header-1", "x-header-2"},
				Expose: []string{"x-header-3", "x-header-4"}, MaxAge: 3600}}},
			{Backends: be, Ext: &model.HTTPActionExt{CORS: &model.CORS{
				Origins: []string{model.AnyOrigin}, Methods: []string{model.Wildcard}, Headers: []string{model.Wildcard}}}},
			{Backends: be},
		}})
	cfg.Frontends[0].HTTP = h
	return cfg
}

func TestGoldenCORS(t *testing.T) {
	assertHTTPGolden(t, httpCORS(), "cors.cfg", "cors-maps.txt")
}

// A policy is data: added, changed or removed, the structure stays.
func TestCORSStructure(t *testing.T) {
	hash := httpStructure(httpCORS)
	base := hash(func(*model.HTTP) {})
	for _, tc := range []struct {
		name   string
		change func(h *model.HTTP)
	}{
		{"an origin added", func(h *model.HTTP) { c := h.Actions[0].Ext.CORS; c.Origins = append(c.Origins, "http://x.example") }},
		{"a policy removed", func(h *model.HTTP) { h.Actions[1].Ext = nil }},
		{"a policy added", func(h *model.HTTP) {
			h.Actions[2].Ext = &model.HTTPActionExt{CORS: &model.CORS{Origins: []string{"http://a.example"}, Expose: []string{"x-new"}}}
		}},
		{"credentials and age changed", func(h *model.HTTP) { c := h.Actions[0].Ext.CORS; c.Credentials, c.MaxAge = false, 5 }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if hash(tc.change) != base {
				t.Fatal("the structure changed")
			}
		})
	}
}

// TestCORSRefuseSyntax: a policy with text that could carry HAProxy or
// map syntax writes no entry at all.
func TestCORSRefuseSyntax(t *testing.T) {
	for _, c := range []model.CORS{
		{Origins: []string{"https://a.example com"}},
		{Origins: []string{"https://a.example|x"}},
		{Origins: []string{"https://A.example"}},
		{Origins: []string{"ftp://a.example"}},
		{Origins: []string{"https://a.*.example"}},
		{Origins: []string{"*", "https://a.example"}},
		{Origins: []string{"https://a.example"}, Methods: []string{"get"}},
		{Origins: []string{"https://a.example"}, Headers: []string{"x|y"}},
		{Origins: []string{"https://a.example"}, Expose: []string{"x y"}},
		{Origins: []string{"https://a.example"}, Methods: []string{"*", "GET"}},
		{Origins: []string{"https://a.example"}, MaxAge: -1},
		{},
	} {
		t.Run(strings.Join(c.Origins, ","), func(t *testing.T) {
			if c.Valid() == "" {
				t.Fatalf("%+v is valid", c)
			}
			out := emptyHTTPMaps()
			corsEntries(out, "a1", &c)
			if len(out[HTTPCORS]) != 0 {
				t.Fatalf("entries written: %v", out[HTTPCORS])
			}
		})
	}
}
