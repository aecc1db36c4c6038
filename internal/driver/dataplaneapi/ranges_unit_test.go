package dataplaneapi

import (
	"context"
	"errors"
	"net/http"
	"net/netip"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/haproxy-k8s-sync/haproxy-k8s-sync/internal/dataplane"
	"github.com/haproxy-k8s-sync/haproxy-k8s-sync/internal/dataplane/dataplanetest"
	"github.com/haproxy-k8s-sync/haproxy-k8s-sync/internal/model"
)

func TestACLFileNamesAndPaths(t *testing.T) {
	for _, tc := range []struct {
		name string
		ours bool
	}{
		{"fe_default_web_80_ipv4.acl", true},
		{"fe_default_web_80_ipv6.acl", true},
		{"fe_default_web_80.acl", true}, // an older release's, both families
		{"fe_kube-system_dns_53_ipv6.acl", true},
		{"fe_default_web_80_ipv5.acl", false},
		{"fe_default_web_80.ipv4.acl", false}, // a name the API never lists (it stores it as _ipv4)
		{"be_default_web_80_ipv4.acl", false},
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
	// The files a restricted frontend's rule names: its two, not an
	// older release's file of both families.
	a := &aclFiles{text: map[string]aclText{"fe_default_web_80": {}}}
	for name, used := range map[string]bool{
		"fe_default_web_80_ipv4.acl": true, "fe_default_web_80_ipv6.acl": true,
		"fe_default_web_80.acl": false, "fe_default_db_5432_ipv4.acl": false,
	} {
		if got := a.aclUsed(name); got != used {
			t.Errorf("aclUsed(%q) = %v, want %v", name, got, used)
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

// Each family's file holds its parsed prefixes, one per line (a family
// without any, a pattern none of its clients matches); the rule checks a
// client against its family's file, named by the path the API reported,
// checked, or (no file known) lists each family's prefixes inline.
func TestSourceRangeRule(t *testing.T) {
	f := model.Frontend{Name: "fe_default_web_80", SourceRanges: []netip.Prefix{netip.MustParsePrefix("10.9.0.0/16"), netip.MustParsePrefix("2001:db8::/32")}}
	var a aclFiles
	if got := a.textOf(f).body; got != [2]string{"10.9.0.0/16\n", "2001:db8::/32\n"} {
		t.Errorf("files %q", got)
	}
	only6 := model.Frontend{Name: f.Name, SourceRanges: f.SourceRanges[1:]}
	if got := a.textOf(only6).body; got != [2]string{"::/128\n", "2001:db8::/32\n"} {
		t.Errorf("files of IPv6 ranges only %q", got)
	}
	const dir = "/etc/haproxy/general/"
	files := "{ src ::ffff:0:0/96 } { src -f " + dir + "fe_default_web_80_ipv4.acl } || !{ src ::ffff:0:0/96 } { src -f " + dir + "fe_default_web_80_ipv6.acl }"
	inline := "{ src ::ffff:0:0/96 } { src 10.9.0.0/16 } || !{ src ::ffff:0:0/96 } { src 2001:db8::/32 }"
	for _, tc := range []struct {
		name  string
		path4 string
		path6 string
		proxy bool
		f     model.Frontend
		want  string
	}{
		{"files", dir + "fe_default_web_80_ipv4.acl", dir + "fe_default_web_80_ipv6.acl", false, f, files},
		{"files, proxy", dir + "fe_default_web_80_ipv4.acl", dir + "fe_default_web_80_ipv6.acl", true, f, files},
		{"no file", "", "", false, f, inline},
		{"one file", dir + "fe_default_web_80_ipv4.acl", "", false, f, inline},
		{"a path haproxy.cfg cannot name", dir + "a b.acl", dir + "fe_default_web_80_ipv6.acl", false, f, inline},
		{"inline, IPv6 only", "", "", false, only6, "!{ src ::ffff:0:0/96 } { src 2001:db8::/32 }"},
	} {
		d := New(Options{})
		d.acl.paths = map[string]string{aclName(f.Name, false): tc.path4, aclName(f.Name, true): tc.path6}
		g := tc.f
		g.AcceptProxy = tc.proxy
		base := Object{"name": f.Name, "http_request_rule_list": []any{"someone's"}}
		d.sourceRanges(base, g)
		rules := base["tcp_request_rule_list"].([]any)
		r := rules[0].(map[string]any)
		stage := "connection"
		if g.AcceptProxy {
			stage = "content"
		}
		if len(rules) != 1 || r["cond_test"] != tc.want || r["type"] != stage || base["http_request_rule_list"] != nil {
			t.Errorf("%s: %v, want one %s rule %q and no other list", tc.name, base, stage, tc.want)
		}
		if _, err := sourceRuleLine(r); err != nil {
			t.Errorf("%s: the rule does not render: %v", tc.name, err)
		}
	}
	base := Object{"tcp_request_rule_list": []any{"old"}}
	New(Options{}).sourceRanges(base, model.Frontend{Name: f.Name})
	if _, ok := base["tcp_request_rule_list"]; ok {
		t.Errorf("an unrestricted frontend keeps a rule: %v", base)
	}
}

// The raw renderer takes only the per-family rule the driver writes: files
// with a path of the grammar, or prefixes of the family they are checked
// for.
func TestSourceRuleLineFile(t *testing.T) {
	rule := func(test string) map[string]any {
		return map[string]any{"type": "connection", "action": "reject", "cond": "unless", "cond_test": test}
	}
	for _, test := range []string{
		"{ src ::ffff:0:0/96 } { src -f /etc/haproxy/general/fe_a_b_80_ipv4.acl } || !{ src ::ffff:0:0/96 } { src -f /etc/haproxy/general/fe_a_b_80_ipv6.acl }",
		"{ src ::ffff:0:0/96 } { src 192.0.2.0/24 198.51.100.7/32 }",
		"!{ src ::ffff:0:0/96 } { src ::/0 }",
	} {
		if got, err := sourceRuleLine(rule(test)); err != nil || got != "tcp-request connection reject unless "+test {
			t.Errorf("got %q, %v", got, err)
		}
	}
	for _, test := range []string{
		"{ src -f /etc/x.acl }", // an older release's rule: one list of both families
		"{ src 192.0.2.0/24 }",
		"{ src ::ffff:0:0/96 } { src -f /etc/x.acl } || { always_true }",
		"{ src ::ffff:0:0/96 } { src -f /etc/x.acl -f /etc/y.acl }",
		"{ src ::ffff:0:0/96 } { src -f /etc/a;b }",
		"{ src ::ffff:0:0/96 } { src -f relative.acl }",
		"{ src ::ffff:0:0/96 } { src -f /etc/../x }",
		"{ src ::ffff:0:0/96 } { src -f /etc/x.acl }\n  http-request deny",
		"{ src ::ffff:0:0/96 } { src ::/0 }",                                                   // IPv6 patterns for IPv4 clients
		"!{ src ::ffff:0:0/96 } { src 10.0.0.0/8 }",                                            // and the other way round
		"{ src ::ffff:0:0/96 } { src 10.0.0.0/8 } || { src ::ffff:0:0/96 } { src 11.0.0.0/8 }", // a family twice
		"{ src ::ffff:0:0/96 } { src 10.0.0.0/8 } ||",
		"",
	} {
		if _, err := sourceRuleLine(rule(test)); !errors.Is(err, errNotRenderable) {
			t.Errorf("%q: %v, want not renderable", test, err)
		}
	}
}

// countRequests counts the requests of each "METHOD PATH-PREFIX" it is
// asked about.
type countRequests struct {
	mu sync.Mutex
	n  map[string]int
}

func (c *countRequests) RoundTrip(r *http.Request) (*http.Response, error) {
	c.mu.Lock()
	if c.n == nil {
		c.n = map[string]int{}
	}
	c.n[r.Method+" "+r.URL.Path]++
	c.mu.Unlock()
	return http.DefaultTransport.RoundTrip(r)
}

func (c *countRequests) take(method, path string) int {
	c.mu.Lock()
	defer c.mu.Unlock()
	n := c.n[method+" "+path]
	delete(c.n, method+" "+path)
	return n
}

// A file of the driver's that no restricted frontend uses, whose delete
// the API refuses (409: haproxy.cfg names it, here in the operator's
// frontend), is tried again after a wait that doubles, not at every pass,
// and the storage is not listed again at every pass; once the
// configuration no longer names it, the next try deletes it.
func TestUnusedACLFileDeleteBacksOff(t *testing.T) {
	ctx := context.Background()
	srv := dataplanetest.Start(t, dataplanetest.Options{ReloadDelay: time.Millisecond})
	count := &countRequests{}
	c, err := dataplane.New(dataplane.Options{URL: srv.URL, Timeout: 10 * time.Second, Transport: count})
	if err != nil {
		t.Fatal(err)
	}
	const file = "fe_default_old_80.acl"
	sf, err := c.CreateGeneralFile(ctx, file, []byte("192.0.2.0/24\n"))
	if err != nil {
		t.Fatal(err)
	}
	version := func() string {
		v, err := c.Version(ctx)
		if err != nil {
			t.Fatal(err)
		}
		return strconv.FormatInt(v, 10)
	}
	operator := Object{"name": "fe_operator", "mode": "tcp", "default_backend": "be_operator",
		"tcp_request_rule_list": []any{map[string]any{"type": "connection", "action": "reject", "cond": "unless", "cond_test": "{ src -f " + sf.File + " }"}}}
	for _, w := range []struct {
		path string
		obj  Object
	}{{dataplane.BackendsPath, Object{"name": "be_operator", "mode": "tcp"}}, {dataplane.FrontendsPath, operator}} {
		if _, err := c.Do(ctx, http.MethodPost, w.path, url.Values{"version": {version()}, "full_section": {"true"}}, w.obj, nil); err != nil {
			t.Fatal(err)
		}
	}
	d := New(Options{Client: c, ReloadPoll: time.Millisecond})
	defer d.Close()
	now := time.Now()
	d.now = func() time.Time { return now }
	cfg := seedCfg("be_default_web_80", "127.81.26.2:30080")
	cfg.Backends[0].TimeoutConnect, cfg.Backends[0].TimeoutServer = 5*time.Second, time.Minute
	files := func() []string {
		fs, err := c.GeneralFiles(ctx)
		if err != nil {
			t.Fatal(err)
		}
		var out []string
		for _, f := range fs {
			out = append(out, f.StorageName)
		}
		return out
	}
	del := "DELETE /v3/services/haproxy/storage/general/" + file
	list := "GET /v3/services/haproxy/storage/general"
	passes := func(n int) {
		t.Helper()
		for range n {
			apply(t, d, cfg)
		}
	}
	passes(1) // the backend added: a reload, then the first delete (409)
	if got := count.take(strings.Fields(del)[0], strings.Fields(del)[1]); got != 1 {
		t.Fatalf("first pass: %d deletes, want 1 (refused)", got)
	}
	if !slices.Contains(files(), file) {
		t.Fatalf("the file named by the operator's frontend is gone")
	}
	count.take(strings.Fields(list)[0], strings.Fields(list)[1])
	passes(5)
	if got := count.take(strings.Fields(del)[0], strings.Fields(del)[1]); got != 0 {
		t.Errorf("%d deletes in 5 passes before the wait ended, want 0", got)
	}
	if got := count.take(strings.Fields(list)[0], strings.Fields(list)[1]); got != 0 {
		t.Errorf("the storage listed %d times in 5 passes, want 0", got)
	}
	now = now.Add(pruneRetryMin)
	passes(2)
	if got := count.take(strings.Fields(del)[0], strings.Fields(del)[1]); got != 1 {
		t.Errorf("after the first wait: %d deletes, want 1 (refused again)", got)
	}
	now = now.Add(pruneRetryMin) // the wait doubled: not yet
	passes(1)
	if got := count.take(strings.Fields(del)[0], strings.Fields(del)[1]); got != 0 {
		t.Errorf("before the doubled wait ended: %d deletes, want 0", got)
	}
	// The operator's frontend no longer names the file.
	delete(operator, "tcp_request_rule_list")
	if _, err := c.Do(ctx, http.MethodPut, dataplane.FrontendPath("fe_operator"), url.Values{"version": {version()}, "full_section": {"true"}}, operator, nil); err != nil {
		t.Fatal(err)
	}
	now = now.Add(pruneRetryMin)
	passes(1)
	if got := count.take(strings.Fields(del)[0], strings.Fields(del)[1]); got != 1 {
		t.Errorf("after the doubled wait: %d deletes, want 1", got)
	}
	if slices.Contains(files(), file) {
		t.Errorf("the unused file is still stored")
	}
	passes(2)
	if got := count.take(strings.Fields(del)[0], strings.Fields(del)[1]); got != 0 {
		t.Errorf("%d deletes once the file is gone", got)
	}
}
