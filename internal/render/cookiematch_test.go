package render

import (
	"bytes"
	"testing"

	"github.com/haproxy-k8s-sync/haproxy-k8s-sync/internal/model"
	"github.com/haproxy-k8s-sync/haproxy-k8s-sync/internal/plan"
)

// TestGoldenCookieMatch: a rule matching a cookie (model.CookieMatch, an
// Ingress's canary-by-cookie) reads the cookie's first value into its
// header set's key (req.cook), beside a header's; HAProxy loads it. A
// cookie name that is not ValidCookieName never reaches the
// configuration and its rule is left out.
func TestGoldenCookieMatch(t *testing.T) {
	cfg := httpRouted()
	cfg.Frontends[0].HTTP = model.Shaped(&model.HTTP{Port: 8080,
		Hosts: []model.HTTPHost{{Name: model.AnyHost, Rules: []model.HTTPRule{
			{PathType: model.PathPrefix, Path: "/", Headers: []model.HeaderMatch{{Name: "x-canary", Value: "always"}}, Action: 1},
			{PathType: model.PathPrefix, Path: "/", Headers: []model.HeaderMatch{{Name: model.CookieMatch + "beta_user", Value: "always"}}, Action: 1},
			{PathType: model.PathPrefix, Path: "/", Headers: []model.HeaderMatch{{Name: model.CookieMatch + "beta_user", Value: "never"}}, Action: 0},
			{PathType: model.PathPrefix, Path: "/", Action: 0},
		}}},
		Actions: []model.HTTPAction{
			{Backends: []model.WeightedBackend{{Name: "gwh_default_a_80", Weight: 1}}},
			{Backends: []model.WeightedBackend{{Name: "gwh_default_b_80", Weight: 1}}},
		}})
	assertHTTPGolden(t, cfg, "cookiematch.cfg", "cookiematch-maps.txt")
	layout, _ := plan.Assign(cfg, nil, true)
	withDir := opts
	withDir.ACLDir = goldenACLDir
	if got := Config(cfg, layout, withDir); !bytes.Contains(got, []byte("%[req.cook(beta_user)]")) {
		t.Error("no req.cook(beta_user) in the configuration")
	}
	for _, bad := range []string{"a)b", "a b", "a;b", "a,b", ""} {
		h := cfg.Frontends[0].HTTP
		h.Hosts[0].Rules[1].Headers[0].Name = model.CookieMatch + bad
		model.Shaped(h)
		got := Config(cfg, layout, withDir)
		if bad != "" && bytes.Contains(got, []byte(bad)) {
			t.Errorf("cookie name %q in the configuration", bad)
		}
		if es := HTTPMaps(h)[HTTPMatch]; len(es) != 3 {
			t.Errorf("cookie name %q: the match map holds %v, want the three other rules", bad, es)
		}
	}
}
