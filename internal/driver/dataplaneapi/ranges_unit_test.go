package dataplaneapi

import (
	"errors"
	"net/netip"
	"testing"

	"github.com/haproxy-k8s-sync/haproxy-k8s-sync/internal/model"
)

func TestACLFileNamesAndPaths(t *testing.T) {
	for _, tc := range []struct {
		name string
		ours bool
	}{
		{"fe_default_web_80.acl", true},
		{"fe_kube-system_dns_53.acl", true},
		{"be_default_web_80.acl", false}, // a backend has no ranges
		{"fe_default_web_80", false},
		{"fe_default_web_80.acl.bak", false},
		{"operator.acl", false},
		{"fe_Default_web_80.acl", false},
	} {
		if got := ourACL(tc.name); got != tc.ours {
			t.Errorf("ourACL(%q) = %v, want %v", tc.name, got, tc.ours)
		}
	}
	for _, tc := range []struct {
		path string
		ok   bool
	}{
		{"/etc/haproxy/general/fe_default_web_80.acl", true},
		{"/var/lib/dataplaneapi/storage/general/fe_a_b_1.acl", true},
		{"relative/fe.acl", false},
		{"/etc/haproxy/../shadow", false},
		{"/etc/haproxy/general/a b.acl", false},
		{"/etc/haproxy/general/a;b.acl", false},
		{"/etc/haproxy/general/a}.acl", false},
		{"/etc/haproxy/general/a\n.acl", false},
		{"/etc//x.acl", false},
		{"", false},
	} {
		if got := validACLPath(tc.path); got != tc.ok {
			t.Errorf("validACLPath(%q) = %v, want %v", tc.path, got, tc.ok)
		}
	}
}

func TestSameRanges(t *testing.T) {
	for _, tc := range []struct {
		entries, lines []string
		same           bool
	}{
		{[]string{"10.0.0.0/8", "127.81.24.5/32"}, []string{"127.81.24.5/32", "10.0.0.0/8"}, true},
		{[]string{"127.81.24.5"}, []string{"127.81.24.5/32"}, true}, // HAProxy may list a host without its length
		{[]string{"2001:db8::/32"}, []string{"2001:db8::/32"}, true},
		{nil, []string{"10.0.0.0/8"}, false}, // an ACL with no entry (404)
		{[]string{"10.0.0.0/8"}, []string{"10.0.0.0/16"}, false},
		{[]string{"10.0.0.0/8", "192.0.2.0/24"}, []string{"10.0.0.0/8"}, false},
		{[]string{"not-an-address"}, []string{"10.0.0.0/8"}, false},
	} {
		if got := sameRanges(tc.entries, tc.lines); got != tc.same {
			t.Errorf("sameRanges(%v, %v) = %v, want %v", tc.entries, tc.lines, got, tc.same)
		}
	}
}

// The file holds the parsed prefixes, one per line; the rule names the
// file by the path the API reported, checked, or (no file known) lists the
// prefixes inline.
func TestSourceRangeRule(t *testing.T) {
	f := model.Frontend{Name: "fe_default_web_80", SourceRanges: []netip.Prefix{netip.MustParsePrefix("10.9.0.0/16"), netip.MustParsePrefix("2001:db8::/32")}}
	if got := aclBody(aclLines(f)); got != "10.9.0.0/16\n2001:db8::/32\n" {
		t.Errorf("file %q", got)
	}
	for _, tc := range []struct {
		path, proxy, want string
	}{
		{"/etc/haproxy/general/fe_default_web_80.acl", "", "{ src -f /etc/haproxy/general/fe_default_web_80.acl }"},
		{"", "", "{ src 10.9.0.0/16 2001:db8::/32 }"},
		{"/etc/haproxy/general/a b.acl", "", "{ src 10.9.0.0/16 2001:db8::/32 }"},
		{"/etc/haproxy/general/fe_default_web_80.acl", "proxy", "{ src -f /etc/haproxy/general/fe_default_web_80.acl }"},
	} {
		d := New(Options{})
		d.acl.paths = map[string]string{aclName(f.Name): tc.path}
		g := f
		g.AcceptProxy = tc.proxy != ""
		base := Object{"name": f.Name, "http_request_rule_list": []any{"someone's"}}
		d.sourceRanges(base, g)
		rules := base["tcp_request_rule_list"].([]any)
		r := rules[0].(map[string]any)
		stage := "connection"
		if g.AcceptProxy {
			stage = "content"
		}
		if len(rules) != 1 || r["cond_test"] != tc.want || r["type"] != stage || base["http_request_rule_list"] != nil {
			t.Errorf("path %q: %v, want one %s rule %q and no other list", tc.path, base, stage, tc.want)
		}
		if _, err := sourceRuleLine(r); err != nil {
			t.Errorf("path %q: the rule does not render: %v", tc.path, err)
		}
	}
	base := Object{"tcp_request_rule_list": []any{"old"}}
	New(Options{}).sourceRanges(base, model.Frontend{Name: f.Name})
	if _, ok := base["tcp_request_rule_list"]; ok {
		t.Errorf("an unrestricted frontend keeps a rule: %v", base)
	}
}

// The raw renderer takes a file rule only with a path of the grammar.
func TestSourceRuleLineFile(t *testing.T) {
	rule := func(test string) map[string]any {
		return map[string]any{"type": "connection", "action": "reject", "cond": "unless", "cond_test": test}
	}
	if got, err := sourceRuleLine(rule("{ src -f /etc/haproxy/general/fe_a_b_80.acl }")); err != nil ||
		got != "tcp-request connection reject unless { src -f /etc/haproxy/general/fe_a_b_80.acl }" {
		t.Errorf("got %q, %v", got, err)
	}
	for _, test := range []string{
		"{ src -f /etc/x.acl } || { always_true }",
		"{ src -f /etc/x.acl -f /etc/y.acl }",
		"{ src -f /etc/a;b }",
		"{ src -f relative.acl }",
		"{ src -f /etc/../x }",
		"{ src -f /etc/x.acl }\n  http-request deny",
	} {
		if _, err := sourceRuleLine(rule(test)); !errors.Is(err, errNotRenderable) {
			t.Errorf("%q: %v, want not renderable", test, err)
		}
	}
}
