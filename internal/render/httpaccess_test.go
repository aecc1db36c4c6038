package render

import (
	"net/netip"
	"slices"
	"strings"
	"testing"

	"github.com/haproxy-k8s-sync/haproxy-k8s-sync/internal/model"
)

// httpAccess is an HTTP table whose actions restrict sources: an allow
// list of both families, a deny list inside it, a deny list alone with
// body, rate and connection limits (a range exempt from them) and a
// global limit keyed by a header and the host (10.0.0.0/8 ignored), and one
// action that declares the
// rules only; two actions ask for basic authentication by the same users
// (one user set) in two realms, the second satisfied by either its
// allow list or its users (satisfy any).
func httpAccess() model.Config {
	cfg := httpRouted()
	users := []model.BasicUser{{Name: "alice", SHA1: "tiY7sUhYKUwI5L3866kDY+ENcrQ="}, {Name: "bob", SHA1: "XyRLaTIb/WCdo8CuWc58gPVHl68="}}
	pfx := func(ss ...string) []netip.Prefix {
		var out []netip.Prefix
		for _, s := range ss {
			out = append(out, netip.MustParsePrefix(s))
		}
		return out
	}
	h := model.Shaped(&model.HTTP{Port: 8080,
		Hosts: []model.HTTPHost{{Name: model.AnyHost, Rules: []model.HTTPRule{
			{PathType: model.PathPrefix, Path: "/office", Action: 1},
			{PathType: model.PathPrefix, Path: "/public", Action: 2},
			{PathType: model.PathPrefix, Path: "/same", Action: 3},
			{PathType: model.PathPrefix, Path: "/asked", Action: 4},
			{PathType: model.PathPrefix, Path: "/service", Action: 5},
			{PathType: model.PathPrefix, Path: "/", Action: 0},
		}}},
		Actions: []model.HTTPAction{
			{Backends: []model.WeightedBackend{{Name: "gwh_default_a_80", Weight: 1}}, Access: &model.HTTPAccess{}},
			{Backends: []model.WeightedBackend{{Name: "gwh_default_a_80", Weight: 1}},
				Access: &model.HTTPAccess{Allow: pfx("192.0.2.0/24", "2001:db8::/32"), Deny: pfx("192.0.2.128/25"), Auth: &model.BasicAuth{Realm: "Office - staff only", Users: users}}},
			{Backends: []model.WeightedBackend{{Name: "gwh_default_b_80", Weight: 1}}, Access: &model.HTTPAccess{Deny: pfx("198.51.100.0/22"), MaxBody: 1 << 20, RPS: 10, Conns: 3, RPM: 6, Exempt: pfx("203.0.113.0/24"), NoLog: true,
				Global: &model.GlobalLimit{Limit: 100, Window: 60, Key: "${http_x_api_client}:$host", Ignored: pfx("10.0.0.0/8"), Scope: "default/limited"}}},
			// The same allow list as action 1's: one set of entries.
			{Backends: []model.WeightedBackend{{Name: "gwh_default_b_80", Weight: 1}},
				Access: &model.HTTPAccess{Allow: pfx("192.0.2.0/24", "2001:db8::/32"), Auth: &model.BasicAuth{Realm: "same", Users: users}, SatisfyAny: true}},
			// External authentication (extauth.go).
			{Backends: []model.WeightedBackend{{Name: "gwh_default_b_80", Weight: 1}},
				Access: &model.HTTPAccess{ExtAuth: &model.ExtAuth{Method: "GET", URL: "http://auth.example.com:8080/check?a=1", Headers: []string{"x-email", "x-user"}, SignIn: "https://login.example.com/start"}}},
			// ... of a cluster Service, through the internal frontend.
			{Backends: []model.WeightedBackend{{Name: "gwh_default_b_80", Weight: 1}},
				Access: &model.HTTPAccess{ExtAuth: &model.ExtAuth{Method: "GET", URL: "http://auth.default.svc/check", Backend: "gwh_default_a_80"}}},
		}})
	cfg.Frontends[0].HTTP = h
	return cfg
}

func TestGoldenHTTPAccess(t *testing.T) {
	assertHTTPGolden(t, httpAccess(), "httpaccess.cfg", "httpaccess-maps.txt") // httpext_test.go
}

// Ranges are data: a range added, changed or removed keeps the
// structure; the rules are written only for a table that has access.
func TestHTTPAccessStructure(t *testing.T) {
	hash := httpStructure(httpAccess)
	base := hash(func(*model.HTTP) {})
	if hash(func(h *model.HTTP) { h.Actions[2].Access.Deny = nil }) != base {
		t.Error("a deny list removed changed the structure")
	}
	if hash(func(h *model.HTTP) { h.Actions[2].Access.Exempt = nil }) != base {
		t.Error("the limits' exempt sources removed changed the structure")
	}
	if hash(func(h *model.HTTP) { h.Actions[1].Access.Allow = []netip.Prefix{netip.MustParsePrefix("10.0.0.0/8")} }) != base {
		t.Error("an allow list changed changed the structure")
	}
	if hash(func(h *model.HTTP) { h.Actions[2].Access.MaxBody = 10 }) != base {
		t.Error("a body limit changed changed the structure")
	}
	if hash(func(h *model.HTTP) { h.Actions[2].Access.RPS, h.Actions[1].Access.Conns = 0, 7 }) != base {
		t.Error("a rate or connection limit changed changed the structure")
	}
	if hash(func(h *model.HTTP) { h.Actions[3].Access.SatisfyAny, h.Actions[1].Access.SatisfyAny = false, true }) != base {
		t.Error("satisfy any removed and given changed the structure")
	}
	if hash(func(h *model.HTTP) {
		h.Actions[2].Access.Global = nil
		h.Actions[1].Access.Global = &model.GlobalLimit{Limit: 5, Window: 1, Scope: "a/b"}
	}) != base {
		t.Error("a global rate limit removed and given changed the structure")
	}
	if hash(func(h *model.HTTP) { h.Actions[2].Access.NoLog, h.Actions[1].Access.NoLog = false, true }) != base {
		t.Error("an action's log switched changed the structure")
	}
	if hash(func(h *model.HTTP) { h.Actions[4].Access.ExtAuth.URL = "https://other.example/" }) != base {
		t.Error("an auth URL changed changed the structure")
	}
	if hash(func(h *model.HTTP) {
		h.Actions[4].Access.ExtAuth = nil
		h.Actions[2].Access.ExtAuth = &model.ExtAuth{Method: "POST", URL: "http://10.0.0.1/"}
	}) != base {
		t.Error("external authentication added or removed changed the structure")
	}
	if hash(func(h *model.HTTP) {
		h.Actions[1].Access.Auth.Users = h.Actions[1].Access.Auth.Users[:1]
		h.Actions[1].Access.Auth.Realm = "other"
		h.Actions[2].Access.Auth = &model.BasicAuth{}
	}) != base {
		t.Error("a user or realm changed or authentication added changed the structure")
	}
	if hash(func(h *model.HTTP) {
		for i := range h.Actions {
			h.Actions[i].Access = nil
		}
	}) == base {
		t.Error("a table without access has the structure of one with")
	}
	if cfg := string(Config(httpRouted(), nil, opts)); strings.Contains(cfg, "txn.ad") {
		t.Error("a table without access has its rules")
	}
}

// RangeKeys: a range is the hex digits of its leading bits, expanded to
// whole digits; IPv4-mapped ranges are IPv4; families apart.
func TestRangeKeys(t *testing.T) {
	for _, tc := range []struct {
		in   string
		want []string
	}{
		{"10.0.0.0/8", []string{"4|0A"}},
		{"192.0.2.7/32", []string{"4|C0000207"}},
		{"0.0.0.0/0", []string{"4|"}},
		{"::/0", []string{"6|"}},
		{"192.0.2.128/25", []string{"4|C00002" + "8", "4|C00002" + "9", "4|C00002A", "4|C00002B", "4|C00002C", "4|C00002D", "4|C00002E", "4|C00002F"}},
		{"198.51.100.0/22", []string{"4|C63364", "4|C63365", "4|C63366", "4|C63367"}},
		{"10.1.2.3/9", []string{"4|0A0", "4|0A1", "4|0A2", "4|0A3", "4|0A4", "4|0A5", "4|0A6", "4|0A7"}},
		{"10.128.0.0/10", []string{"4|0A8", "4|0A9", "4|0AA", "4|0AB"}},
		{"10.192.0.0/11", []string{"4|0AC", "4|0AD"}},
		{"2001:db8::/32", []string{"6|20010DB8"}},
		{"2001:db8::1/128", []string{"6|20010DB8000000000000000000000001"}},
		{"::ffff:192.0.2.0/120", []string{"4|C00002"}},
		{"::ffff:0:0/96", []string{"4|"}},
		{"::/64", []string{"6|0000000000000000"}},
	} {
		got := RangeKeys(netip.MustParsePrefix(tc.in))
		if !slices.Equal(got, tc.want) {
			t.Errorf("RangeKeys(%s) = %q, want %q", tc.in, got, tc.want)
		}
	}
	if got := RangeKeys(netip.Prefix{}); got != nil {
		t.Errorf("the zero prefix: %q, want none", got)
	}
}
