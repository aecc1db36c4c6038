package dataplaneapi

import (
	"context"
	"fmt"
	"net/http"
	"net/url"
	"slices"
	"testing"

	"github.com/haproxy-k8s-sync/haproxy-k8s-sync/internal/dataplane"
	"github.com/haproxy-k8s-sync/haproxy-k8s-sync/internal/model"
)

// A client is checked against the source ranges of its own family only:
// ["127.81.28.5/32", "::/0"] lets in that one IPv4 client and no other
// (HAProxy, with one list of both families, tries an IPv4 client that
// misses the IPv4 ranges against ::/0 as ::ffff:a.b.c.d and lets it in).
// Ranges moving between the families are no reload: each family's file
// changes at runtime, a family without ranges holding a pattern none of
// its clients matches.
func TestContractSourceRangesPerFamily(t *testing.T) {
	run(t, func(t *testing.T, a *api) {
		ctx := context.Background()
		cfg, d, addr := familyService(t, a, "hks-aclfam", 28)
		fe := cfg.Frontends[0].Name
		waitServed(t, addr, "127.81.28.5")
		if !refused(t, addr, "127.81.28.6") {
			t.Errorf("an IPv4 client outside the IPv4 ranges was served (let in by ::/0)")
		}
		a.wantRule(t, fe, "connection")
		a.wantRunning(t, cfg.Frontends[0])

		r0, v0 := a.reloads(t), a.version(t)
		for _, step := range []struct {
			ranges []string
			served map[string]bool
		}{
			{[]string{"::/0"}, map[string]bool{"127.81.28.5": false, "127.81.28.6": false}},
			{[]string{"127.81.28.6/32", "2001:db8::/32"}, map[string]bool{"127.81.28.5": false, "127.81.28.6": true}},
			{[]string{"127.81.28.0/24"}, map[string]bool{"127.81.28.5": true, "127.81.28.6": true}},
		} {
			cfg.Frontends = slices.Clone(cfg.Frontends)
			cfg.Frontends[0].SourceRanges = prefixes(step.ranges...)
			if res, err := d.Apply(ctx, cfg); err != nil || res.Reloaded {
				t.Fatalf("ranges %v: %v, reloaded %v", step.ranges, err, res.Reloaded)
			}
			for from, want := range step.served {
				if got := greeted(addr, from); got != want {
					t.Errorf("ranges %v: client %s served %v, want %v", step.ranges, from, got, want)
				}
			}
			a.wantRunning(t, cfg.Frontends[0])
		}
		if r, v := a.reloads(t)-r0, a.version(t); r != 0 || v != v0 {
			t.Errorf("ranges moving between the families made %d reloads, version %d → %d; want none", r, v0, v)
		}
		a.nothingToWrite(t, Options{}, cfg)
	})
}

// A frontend whose rule reads one file of both families (FRONTEND.acl, as
// this driver wrote it before the per-family check) is rewritten once,
// with one reload, to the per-family rule; the older file, no longer
// named, is deleted.
func TestContractSourceRangesOlderFileConverted(t *testing.T) {
	run(t, func(t *testing.T, a *api) {
		ctx := context.Background()
		cfg, d, addr := familyService(t, a, "hks-aclone", 29)
		fe := cfg.Frontends[0].Name
		older := fe + aclSuffix
		sf, err := a.c.CreateGeneralFile(ctx, older, []byte("127.81.29.5/32\n::/0\n"))
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = a.c.DeleteGeneralFile(context.Background(), older) })
		var obj Object
		if _, err := a.c.Do(ctx, http.MethodGet, dataplane.FrontendPath(fe), url.Values{"full_section": {"true"}}, nil, &obj); err != nil {
			t.Fatal(err)
		}
		obj["tcp_request_rule_list"] = []any{map[string]any{"type": "connection", "action": "reject", "cond": "unless", "cond_test": "{ src -f " + sf.File + " }"}}
		resp, err := a.c.Replace(ctx, dataplane.FrontendPath(fe), obj, dataplane.Write{Version: a.version(t), Full: true})
		if err != nil {
			t.Fatal(err)
		}
		a.waitReload(t, resp.ReloadID)
		a.reloadHAProxy(t)                 // HAProxy runs it (the write may have skipped the reload)
		waitServed(t, addr, "127.81.29.6") // the older rule lets every IPv4 client in
		r0 := a.reloads(t)
		d = a.driver(Options{}) // the upgraded controller
		if res, err := d.Apply(ctx, cfg); err != nil || !res.Reloaded {
			t.Fatalf("the older rule: %v, reloaded %v, want one rewrite", err, res.Reloaded)
		}
		a.wantRule(t, fe, "connection")
		waitServed(t, addr, "127.81.29.5")
		if !refused(t, addr, "127.81.29.6") {
			t.Errorf("after the rewrite an IPv4 client outside the IPv4 ranges is still served")
		}
		if _, err := a.c.GeneralFile(ctx, older); err == nil {
			t.Errorf("the older file %s is still stored", older)
		}
		if r := a.reloads(t) - r0; r != 1 {
			t.Errorf("%d reloads, want 1 (the rewrite)", r)
		}
	})
}

// familyService is the Service ns on 127.81.N.1, restricted to
// ["127.81.N.5/32", "::/0"], its server a hello server on 127.81.N.9,
// applied by a new driver; and its frontend's address.
func familyService(t *testing.T, a *api, ns string, n int) (model.Config, *Driver, string) {
	t.Helper()
	up := helloServer(t, fmt.Sprintf("127.81.%d.9", n))
	lb := fmt.Sprintf("127.81.%d.1", n)
	cfg := classCfg(t, a, ns, lb, uint16(freeTCPPort(t)), "be_"+ns+"_web_80", up)
	cfg.Frontends[0].SourceRanges = prefixes(fmt.Sprintf("127.81.%d.5/32", n), "::/0")
	d := a.driver(Options{})
	apply(t, d, cfg)
	return cfg, d, fmt.Sprintf("%s:%d", lb, cfg.Frontends[0].Binds[0].Port)
}
