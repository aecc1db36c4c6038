package dataplaneapi

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/netip"
	"net/url"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/haproxy-k8s-sync/haproxy-k8s-sync/internal/dataplane"
	"github.com/haproxy-k8s-sync/haproxy-k8s-sync/internal/model"
)

// A change of a Service's source ranges costs no reload: the frontend's
// rule reads them from its file in the API's storage, which is replaced on
// disk and then in the running worker at once. A client inside the ranges
// is served and one outside refused, then the other way round, with no
// reload (counted by HAProxy's master) and no new configuration version;
// the file on disk holds what the worker runs, so a reload (or restart)
// keeps the new ranges; a new driver finds nothing to write; and once the
// Service is no longer restricted, the rule and the file go.
func TestContractSourceRangesWithoutReload(t *testing.T) {
	run(t, func(t *testing.T, a *api) {
		ctx := context.Background()
		up := helloServer(t, "127.81.24.9")
		cfg := classCfg(t, a, "hks-acl", "127.81.24.1", uint16(freeTCPPort(t)), "be_hks-acl_web_80", up)
		cfg.Frontends[0].SourceRanges = []netip.Prefix{netip.MustParsePrefix("127.81.24.5/32"), netip.MustParsePrefix("192.0.2.0/24")}
		// A second Service, with the PROXY protocol (the content stage; no
		// traffic: its clients would send a PROXY header).
		other := classCfg(t, a, "hks-acl2", "127.81.24.2", uint16(freeTCPPort(t)), "be_hks-acl2_web_80", "127.81.24.3:30080")
		other.Frontends[0].AcceptProxy = true
		other.Frontends[0].SourceRanges = []netip.Prefix{netip.MustParsePrefix("2001:db8::/32")}
		cfg.Frontends = append(cfg.Frontends, other.Frontends...)
		cfg.Backends = append(cfg.Backends, other.Backends...)
		d := a.driver(Options{})
		apply(t, d, cfg)
		fe := cfg.Frontends[0].Name
		addr := fmt.Sprintf("127.81.24.1:%d", cfg.Frontends[0].Binds[0].Port)
		waitServed(t, addr, "127.81.24.5")
		if !refused(t, addr, "127.81.24.6") {
			t.Fatalf("a client outside the source ranges was served")
		}
		a.wantRule(t, fe, "connection")
		a.wantRule(t, other.Frontends[0].Name, "content")

		r0, v0 := a.reloads(t), a.version(t)
		for i, ranges := range [][]string{{"127.81.24.6/32"}, {"127.81.24.5/32", "198.51.100.0/24"}} {
			in, out := "127.81.24.6", "127.81.24.5"
			if i == 1 {
				in, out = out, in
			}
			cfg.Frontends = slices.Clone(cfg.Frontends)
			cfg.Frontends[0].SourceRanges = prefixes(ranges...)
			cfg.Frontends[1].SourceRanges = prefixes("2001:db8:1::/48", "203.0.113.0/24")[i:]
			start := time.Now()
			res, err := d.Apply(ctx, cfg)
			took := time.Since(start)
			if err != nil || res.Reloaded {
				t.Fatalf("ranges %v: %v, reloaded %v", ranges, err, res.Reloaded)
			}
			if !greeted(addr, in) {
				t.Errorf("ranges %v: a client at %s inside them is not served once the pass ends", ranges, in)
			}
			if !refused(t, addr, out) {
				t.Errorf("ranges %v: a client at %s outside them was served", ranges, out)
			}
			t.Logf("ranges %v: the pass took %v (%d writes)", ranges, took, res.Ops)
			for _, f := range cfg.Frontends {
				a.wantRunning(t, f)
			}
		}
		if r, v := a.reloads(t)-r0, a.version(t); r != 0 || v != v0 {
			t.Errorf("changes of source ranges made %d reloads, version %d → %d; want none", r, v0, v)
		}
		a.nothingToWrite(t, Options{}, cfg)

		// HAProxy reloads (not through the API): the new ranges stay.
		a.reloadHAProxy(t)
		waitServed(t, addr, "127.81.24.5")
		if !refused(t, addr, "127.81.24.6") {
			t.Errorf("after a reload, a client outside the source ranges was served")
		}
		for _, f := range cfg.Frontends {
			a.wantRunning(t, f)
		}
		d.Invalidate() // a resync: the driver finds the new worker, and nothing to do
		apply(t, d, cfg)
		if res, err := d.Apply(ctx, cfg); err != nil || res.Ops != 0 {
			t.Errorf("after the reload: %d writes (%v), want none", res.Ops, err)
		}

		// The API keeps a file haproxy.cfg names.
		if err := a.c.DeleteGeneralFile(ctx, aclName(fe)); !errors.Is(err, dataplane.ErrExists) {
			t.Errorf("deleting a file haproxy.cfg names: %v, want 409", err)
		}

		// No longer restricted: the rule goes (a reload), then the file.
		cfg.Frontends = slices.Clone(cfg.Frontends)
		cfg.Frontends[0].SourceRanges = nil
		res, err := d.Apply(ctx, cfg)
		if err != nil || !res.Reloaded {
			t.Fatalf("ranges removed: %v, reloaded %v", err, res.Reloaded)
		}
		waitServed(t, addr, "127.81.24.6")
		if _, err := a.c.GeneralFile(ctx, aclName(fe)); !errors.Is(err, dataplane.ErrNotFound) {
			t.Errorf("the file of a frontend no longer restricted: %v, want it deleted", err)
		}
		a.nothingToWrite(t, Options{}, cfg)
	})
}

func prefixes(ss ...string) []netip.Prefix {
	out := make([]netip.Prefix, len(ss))
	for i, s := range ss {
		out[i] = netip.MustParsePrefix(s)
	}
	return out
}

func greeted(fe, from string) bool {
	got, _ := greet(fe, from)
	return strings.HasPrefix(got, "hello")
}

// wantRule checks that a frontend's one rule reads its ranges from its file.
func (a *api) wantRule(t *testing.T, fe, stage string) {
	t.Helper()
	rules, _, err := a.c.List(context.Background(), dataplane.FrontendPath(fe)+"/tcp_request_rules", "")
	if err != nil || len(rules) != 1 || rules[0]["type"] != stage || rules[0]["action"] != "reject" || rules[0]["cond"] != "unless" {
		t.Fatalf("%s: rules %v (%v), want one %s reject", fe, rules, err, stage)
	}
	if path, ok := aclFileRule(rules[0]["cond_test"].(string)); !ok || !strings.HasSuffix(path, "/"+aclName(fe)) {
		t.Errorf("%s: rule %q, want { src -f .../%s }", fe, rules[0]["cond_test"], aclName(fe))
	}
}

// wantRunning checks that the file of a restricted frontend holds its
// ranges on disk, and the running worker the same.
func (a *api) wantRunning(t *testing.T, f model.Frontend) {
	t.Helper()
	ctx := context.Background()
	want := aclLines(f)
	disk, err := a.c.GeneralFile(ctx, aclName(f.Name))
	if err != nil || !sameRanges(strings.Fields(string(disk)), want) {
		t.Errorf("%s: file %q (%v), want %v", f.Name, disk, err, want)
	}
	files, err := a.c.GeneralFiles(ctx)
	if err != nil {
		t.Fatal(err)
	}
	path := ""
	for _, sf := range files {
		if sf.StorageName == aclName(f.Name) {
			path = sf.File
		}
	}
	acls, err := a.c.RuntimeACLs(ctx)
	if err != nil {
		t.Fatal(err)
	}
	for _, acl := range acls {
		if acl.StorageName == path {
			got, err := a.c.RuntimeACLEntries(ctx, acl.ID)
			if err != nil || !sameRanges(got, want) {
				t.Errorf("%s: the worker runs %v (%v), want %v", f.Name, got, err, want)
			}
			return
		}
	}
	t.Errorf("%s: the worker has no ACL of %q", f.Name, path)
}

// reloadHAProxy reloads HAProxy behind the API's back: its master (real),
// or a restart of the test server's.
func (a *api) reloadHAProxy(t *testing.T) {
	t.Helper()
	if a.srv != nil {
		a.srv.Restart()
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if err := a.master.Reload(ctx); err != nil {
		t.Fatal(err)
	}
}

// deleteACLFile deletes a frontend's file from the API's storage when a
// test ends (after its frontend).
func (a *api) deleteACLFile(t *testing.T, frontend string) {
	t.Helper()
	if err := a.c.DeleteGeneralFile(context.Background(), aclName(frontend)); err != nil && !errors.Is(err, dataplane.ErrNotFound) {
		t.Errorf("deleting the file of %s: %v", frontend, err)
	}
}

// failOnce fails the first request whose method and path match, as a lost
// connection would, before it reaches the API.
type failOnce struct {
	method, path string
	done         bool
}

func (f *failOnce) RoundTrip(r *http.Request) (*http.Response, error) {
	if !f.done && r.Method == f.method && strings.Contains(r.URL.EscapedPath(), f.path) {
		f.done = true
		return nil, errors.New("connection lost (test)")
	}
	return http.DefaultTransport.RoundTrip(r)
}

// A change of ranges whose file or running list could not be written is
// made whole by the next pass: the pass fails (the workqueue retries it),
// and until then a client is served as the old ranges or the new ones say,
// never as neither.
func TestContractSourceRangesRetried(t *testing.T) {
	for _, tc := range []struct{ name, path string }{
		{"file", "/storage/general/"},
		{"running list", "/runtime/acls/"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			run(t, func(t *testing.T, a *api) {
				up := helloServer(t, "127.81.25.9")
				cfg := classCfg(t, a, "hks-aclretry", "127.81.25.1", uint16(freeTCPPort(t)), "be_hks-aclretry_web_80", up)
				cfg.Frontends[0].SourceRanges = prefixes("127.81.25.5/32")
				fail := &failOnce{method: http.MethodPut, path: tc.path}
				d := a.driver(Options{Client: a.client(t, fail)})
				apply(t, d, cfg)
				addr := fmt.Sprintf("127.81.25.1:%d", cfg.Frontends[0].Binds[0].Port)
				waitServed(t, addr, "127.81.25.5")
				r0 := a.reloads(t)
				cfg.Frontends = slices.Clone(cfg.Frontends)
				cfg.Frontends[0].SourceRanges = prefixes("127.81.25.6/32")
				if _, err := d.Apply(context.Background(), cfg); err == nil || !fail.done {
					t.Fatalf("the pass with a failed write: %v, want an error", err)
				}
				if greeted(addr, "127.81.25.6") && greeted(addr, "127.81.25.5") {
					t.Errorf("after the failed pass both clients are served")
				}
				apply(t, d, cfg)
				if !greeted(addr, "127.81.25.6") || !refused(t, addr, "127.81.25.5") {
					t.Errorf("the retried pass does not serve the new ranges alone")
				}
				a.wantRunning(t, cfg.Frontends[0])
				if r := a.reloads(t) - r0; r != 0 {
					t.Errorf("%d reloads", r)
				}
				a.nothingToWrite(t, Options{}, cfg)
			})
		})
	}
}

// A frontend whose rule lists its ranges inline (as this driver wrote them
// before they moved to files) is rewritten once, with one reload, to read
// its file; then a change of ranges needs none.
func TestContractSourceRangesInlineRuleConverted(t *testing.T) {
	run(t, func(t *testing.T, a *api) {
		ctx := context.Background()
		up := helloServer(t, "127.81.27.9")
		cfg := classCfg(t, a, "hks-aclold", "127.81.27.1", uint16(freeTCPPort(t)), "be_hks-aclold_web_80", up)
		cfg.Frontends[0].SourceRanges = prefixes("127.81.27.5/32")
		d := a.driver(Options{})
		apply(t, d, cfg)
		fe := cfg.Frontends[0].Name
		// The rule as the driver wrote it before: ranges inline.
		// (Rule lists are written only with the section whole.)
		var obj Object
		if _, err := a.c.Do(ctx, http.MethodGet, dataplane.FrontendPath(fe), url.Values{"full_section": {"true"}}, nil, &obj); err != nil {
			t.Fatal(err)
		}
		obj["tcp_request_rule_list"] = []any{map[string]any{"type": "connection", "action": "reject", "cond": "unless", "cond_test": "{ src 127.81.27.5/32 }"}}
		resp, err := a.c.Replace(ctx, dataplane.FrontendPath(fe), obj, dataplane.Write{Version: a.version(t), Full: true})
		if err != nil {
			t.Fatal(err)
		}
		a.waitReload(t, resp.ReloadID)
		r0 := a.reloads(t)
		d = a.driver(Options{}) // a new controller
		if res, err := d.Apply(ctx, cfg); err != nil || !res.Reloaded {
			t.Fatalf("the inline rule: %v, reloaded %v, want one rewrite", err, res.Reloaded)
		}
		a.wantRule(t, fe, "connection")
		addr := fmt.Sprintf("127.81.27.1:%d", cfg.Frontends[0].Binds[0].Port)
		waitServed(t, addr, "127.81.27.5")
		cfg.Frontends = slices.Clone(cfg.Frontends)
		cfg.Frontends[0].SourceRanges = prefixes("127.81.27.6/32")
		if res, err := d.Apply(ctx, cfg); err != nil || res.Reloaded {
			t.Fatalf("then a change: %v, reloaded %v", err, res.Reloaded)
		}
		if !greeted(addr, "127.81.27.6") || !refused(t, addr, "127.81.27.5") {
			t.Errorf("the changed ranges are not enforced")
		}
		if r := a.reloads(t) - r0; r != 1 {
			t.Errorf("%d reloads, want 1 (the rewrite)", r)
		}
	})
}
