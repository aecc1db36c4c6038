package dataplaneapi

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"net"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/haproxy-k8s-sync/haproxy-k8s-sync/internal/dataplane"
	"github.com/haproxy-k8s-sync/haproxy-k8s-sync/internal/model"
)

func TestContractFirstSyncAndResync(t *testing.T) {
	run(t, func(t *testing.T, a *api) {
		be := a.seedBackend(t, "be_hks_firstsync")
		d := a.driver(Options{Seed: be})
		r0 := a.reloads(t)
		apply(t, d, seedCfg(be, "127.81.1.1:30080", "127.81.1.2:30080", "127.81.1.3:30080"))
		if got, want := a.serving(t, be), set("127.81.1.1:30080", "127.81.1.2:30080", "127.81.1.3:30080"); !maps.Equal(got, want) {
			t.Fatalf("serving %v, want %v", got, want)
		}
		if a.reloads(t) <= r0 {
			t.Errorf("the first sync adds slots: it must have reloaded")
		}
		// A resync with nothing different: reads only.
		v, r1 := a.version(t), a.reloads(t)
		for range 3 {
			d.Invalidate()
			res, err := d.Apply(context.Background(), seedCfg(be, "127.81.1.3:30080", "127.81.1.1:30080", "127.81.1.2:30080"))
			if err != nil || res.Ops != 0 || res.Reloaded {
				t.Fatalf("resync: ops=%d reloaded=%v err=%v, want nothing written", res.Ops, res.Reloaded, err)
			}
		}
		if a.version(t) != v || a.reloads(t) != r1 {
			t.Errorf("resync wrote: version %d→%d, reloads %d→%d", v, a.version(t), r1, a.reloads(t))
		}
		if a.srv != nil && a.srv.OpenTransactions() != 0 {
			t.Errorf("transactions left open")
		}
	})
}

func TestContractNodeRemovedServerGone(t *testing.T) {
	run(t, func(t *testing.T, a *api) {
		be := a.seedBackend(t, "be_hks_noderemoved")
		d := a.driver(Options{Seed: be})
		apply(t, d, seedCfg(be, "127.81.3.1:30080", "127.81.3.2:30080"))
		apply(t, d, seedCfg(be, "127.81.3.1:30080"))
		if got := a.serving(t, be); !maps.Equal(got, set("127.81.3.1:30080")) {
			t.Fatalf("serving %v after the node went", got)
		}
		// Past the slots' headroom, the free slots are deleted at the
		// next reload: grow (reload), then shrink the layout on another.
		many := []string{}
		for i := 1; i <= 12; i++ {
			many = append(many, fmt.Sprintf("127.81.3.%d:30080", i))
		}
		apply(t, d, seedCfg(be, many...))
		apply(t, d, seedCfg(be, "127.81.3.1:30080"))
		if got := a.serving(t, be); !maps.Equal(got, set("127.81.3.1:30080")) {
			t.Fatalf("serving %v after 11 nodes went", got)
		}
		// The configuration follows.
		if err := d.Flush(context.Background()); err != nil {
			t.Fatal(err)
		}
		servers, _, err := a.c.List(context.Background(), dataplane.ServersPath(be), "")
		if err != nil {
			t.Fatal(err)
		}
		for _, s := range servers {
			if s["address"] == "127.81.3.5" && s["maintenance"] != "enabled" {
				t.Errorf("server %v of a removed node still in service", s)
			}
		}
	})
}

// Another writer moves the version during a pass. A change HAProxy runs at
// once does not mind (the runtime endpoints have no version): it serves at
// once, the write of the configuration that follows fails (409), and the
// retry writes it. A commit answers 409 "version mismatch": nothing
// changed, no transaction is left open, and the retry goes through.
func TestContractVersionBumpedMeanwhile(t *testing.T) {
	run(t, func(t *testing.T, a *api) {
		const be = "be_hks_bumped"
		for _, tc := range []struct {
			name            string
			match           func(*http.Request) bool
			cfg             model.Config
			applyErr, flush error
		}{
			{"runtime change", func(r *http.Request) bool {
				return r.Method == http.MethodPut && strings.Contains(r.URL.Path, "/runtime/")
			}, seedCfg(be, "127.81.4.2:30080"), nil, dataplane.ErrVersionMismatch},
			{"transaction commit", func(r *http.Request) bool {
				return r.Method == http.MethodPut && strings.Contains(r.URL.Path, "/transactions/")
			}, seedCfg(be, "127.81.4.1:30080", "127.81.4.2:30080", "127.81.4.3:30080", "127.81.4.4:30080", "127.81.4.5:30080",
				"127.81.4.6:30080", "127.81.4.7:30080", "127.81.4.8:30080", "127.81.4.9:30080"), dataplane.ErrVersionMismatch, nil},
		} {
			t.Run(tc.name, func(t *testing.T) {
				a.seedBackend(t, be) // afresh: slots left by another case would change what this one does
				apply(t, a.driver(Options{Seed: be}), seedCfg(be, "127.81.4.1:30080"))
				h := &hook{match: tc.match, before: func() { bumpVersion(t, a, be) }}
				d := a.driver(Options{Seed: be, Client: a.client(t, h)})
				_, err := d.Apply(context.Background(), tc.cfg)
				if !h.done.Load() {
					t.Fatalf("the pass sent no %s: the case did not happen", tc.name)
				}
				if !errors.Is(err, tc.applyErr) {
					t.Fatalf("Apply with a version bumped meanwhile: %v, want %v", err, tc.applyErr)
				}
				if n := a.openTx(t); n != 0 {
					t.Errorf("%d transactions left open", n)
				}
				if err == nil {
					a.wantServing(t, be, tc.cfg)
				}
				if err := d.Flush(context.Background()); !errors.Is(err, tc.flush) {
					t.Errorf("writing the configuration: %v, want %v", err, tc.flush)
				}
				apply(t, d, tc.cfg) // the workqueue's retry
				if err := d.Flush(context.Background()); err != nil {
					t.Errorf("writing the configuration after the retry: %v", err)
				}
				a.wantServing(t, be, tc.cfg)
				a.wantConfigured(t, be, tc.cfg)
			})
		}
	})
}

// bumpVersion is another writer: it writes a server back unchanged,
// outside a transaction, which moves the version without a reload.
func bumpVersion(t *testing.T, a *api, be string) {
	ctx := context.Background()
	s, _, err := a.c.Get(ctx, dataplane.ServerPath(be, "s1"), "")
	if err != nil {
		t.Errorf("bump: %v", err)
		return
	}
	v, _ := a.c.Version(ctx)
	if _, err := a.c.Replace(ctx, dataplane.ServerPath(be, "s1"), s, dataplane.Write{Version: v}); err != nil {
		t.Errorf("bump: %v", err)
	}
}

// classCfg is Service ns/web the way the HAProxy driver names it
// (fe_NS_web_80, be_NS_web_80), listening on addr:port; its frontend names
// backend. A test deletes its sections when it ends.
func classCfg(t *testing.T, a *api, ns, addr string, port uint16, backend string, servers ...string) model.Config {
	cfg := seedCfg("be_"+ns+"_web_80", servers...)
	cfg.Backends[0].TimeoutConnect, cfg.Backends[0].TimeoutServer = 5*time.Second, time.Minute
	t.Cleanup(func() {
		a.deleteSection(t, dataplane.FrontendPath("fe_"+ns+"_web_80"))
		a.deleteACLFile(t, "fe_"+ns+"_web_80")
		a.deleteSection(t, dataplane.BackendPath("be_"+ns+"_web_80"))
	})
	cfg.Frontends = []model.Frontend{{Name: "fe_" + ns + "_web_80", Backend: backend,
		Binds: []model.Bind{{Addr: mustAddr(addr), Port: port}}}}
	return cfg
}

func TestContractCommitFailsValidation(t *testing.T) {
	run(t, func(t *testing.T, a *api) {
		d := a.driver(Options{})
		v, r0 := a.version(t), a.reloads(t)
		// A frontend naming a backend that does not exist: haproxy -c refuses it.
		_, err := d.Apply(context.Background(), classCfg(t, a, "hks-commit", "127.81.5.1", uint16(freeTCPPort(t)), "be_hks-commit_nothing_80", "127.81.5.2:30080"))
		if !errors.Is(err, dataplane.ErrValidation) {
			t.Fatalf("Apply: %v, want a validation error", err)
		}
		if n := a.openTx(t); n != 0 {
			t.Errorf("%d transactions left open", n)
		}
		if a.version(t) != v || a.reloads(t) != r0 {
			t.Errorf("a refused commit changed the version or reloaded")
		}
		if _, _, err := a.c.Get(context.Background(), dataplane.FrontendPath("fe_hks-commit_web_80"), ""); !errors.Is(err, dataplane.ErrNotFound) {
			t.Errorf("frontend of the refused commit: %v, want not found", err)
		}
	})
}

func TestContractReloadFailsThenRepaired(t *testing.T) {
	run(t, func(t *testing.T, a *api) {
		be := a.seedBackend(t, "be_hks_repaired")
		d := a.driver(Options{})
		busy, err := net.Listen("tcp", "127.81.6.1:0")
		if err != nil {
			t.Fatal(err)
		}
		port := uint16(busy.Addr().(*net.TCPAddr).Port)
		_, err = d.Apply(context.Background(), classCfg(t, a, "hks-repair", "127.81.6.1", port, "be_hks-repair_web_80", "127.81.6.2:30080"))
		busy.Close()
		if !errors.Is(err, dataplane.ErrReloadFailed) {
			t.Fatalf("Apply binding a busy port: %v, want a failed reload", err)
		}
		if !strings.Contains(err.Error(), "bind") {
			t.Errorf("the error does not carry the API's message: %v", err)
		}
		if n := a.openTx(t); n != 0 {
			t.Errorf("%d transactions left open", n)
		}
		// Repaired: the API no longer holds the refused frontend.
		if _, _, err := a.c.Get(context.Background(), dataplane.FrontendPath("fe_hks-repair_web_80"), ""); !errors.Is(err, dataplane.ErrNotFound) {
			t.Errorf("after the repair the frontend is still there: %v", err)
		}
		// Later changes go live.
		good := uint16(freeTCPPort(t))
		apply(t, d, classCfg(t, a, "hks-repair", "127.81.6.1", good, "be_hks-repair_web_80", "127.81.6.2:30080"))
		if got := a.serving(t, "be_hks-repair_web_80"); !maps.Equal(got, set("127.81.6.2:30080")) {
			t.Errorf("serving %v after the repair", got)
		}
		if a.srv != nil {
			if c, err := net.DialTimeout("tcp", fmt.Sprintf("127.81.6.1:%d", good), time.Second); err != nil {
				t.Errorf("HAProxy does not listen after the repair: %v", err)
			} else {
				c.Close()
			}
		}
		// Deleting the Service deletes its frontend and backend.
		apply(t, d, model.Config{})
		if _, _, err := a.c.Get(context.Background(), dataplane.BackendPath("be_hks-repair_web_80"), ""); !errors.Is(err, dataplane.ErrNotFound) {
			t.Errorf("backend of a deleted Service: %v", err)
		}
		if _, _, err := a.c.Get(context.Background(), dataplane.BackendPath(be), ""); err != nil {
			t.Errorf("a backend the driver does not own was touched: %v", err)
		}
	})
}

func TestContractCredentials(t *testing.T) {
	run(t, func(t *testing.T, a *api) {
		be := a.seedBackend(t, "be_hks_credentials")
		wrong, err := dataplane.New(dataplane.Options{URL: a.url, Username: a.user, Password: "wrong-password-xyz"})
		if err != nil {
			t.Fatal(err)
		}
		_, err = a.driver(Options{Seed: be, Client: wrong}).Apply(context.Background(), seedCfg(be, "127.81.7.1:30080"))
		if !errors.Is(err, dataplane.ErrUnauthorized) || strings.Contains(err.Error(), "wrong-password-xyz") {
			t.Errorf("wrong password: %v, want unauthorized, without the password", err)
		}
		apply(t, a.driver(Options{Seed: be}), seedCfg(be, "127.81.7.1:30080"))
		if a.srv == nil {
			t.Log("bearer token: skipped against the real API (it authenticates users of its userlist)")
			return
		}
		bearer, err := dataplane.New(dataplane.Options{URL: a.url, Token: token})
		if err != nil {
			t.Fatal(err)
		}
		apply(t, a.driver(Options{Seed: be, Client: bearer}), seedCfg(be, "127.81.7.2:30080"))
		if got := a.serving(t, be); !maps.Equal(got, set("127.81.7.2:30080")) {
			t.Errorf("with a bearer token serving %v", got)
		}
	})
}

func TestContractDrainThroughRuntime(t *testing.T) {
	run(t, func(t *testing.T, a *api) {
		be := a.seedBackend(t, "be_hks_drain")
		d := a.driver(Options{Seed: be})
		cfg := seedCfg(be, "127.81.10.1:30080", "127.81.10.2:30080")
		apply(t, d, cfg)
		r0 := a.reloads(t)
		draining := seedCfg(be, "127.81.10.1:30080", "127.81.10.2:30080")
		draining.Backends[0].Servers[1].Drain = true
		apply(t, d, draining)
		states := map[string]string{}
		rs, err := a.c.RuntimeServers(context.Background(), be)
		if err != nil {
			t.Fatal(err)
		}
		for _, r := range rs {
			states[fmt.Sprint(r["address"])] = fmt.Sprint(r["admin_state"])
		}
		if states["127.81.10.2"] != "drain" || states["127.81.10.1"] != "ready" {
			t.Errorf("runtime states %v, want 127.81.10.2 in drain", states)
		}
		apply(t, d, cfg)
		if got := a.serving(t, be); !maps.Equal(got, set("127.81.10.1:30080", "127.81.10.2:30080")) {
			t.Errorf("after the drain ended serving %v", got)
		}
		if a.reloads(t) != r0 {
			t.Errorf("drain reloaded")
		}
	})
}

// Every Service through the API: sections created with the HAProxy
// driver's names and settings, changed in one transaction, deleted when
// the Service goes; the operator's sections are never touched.
func TestContractEveryServiceSections(t *testing.T) {
	run(t, func(t *testing.T, a *api) {
		be := a.seedBackend(t, "be_hks_operator")
		ctx := context.Background()
		d := a.driver(Options{})
		port := uint16(freeTCPPort(t))
		cfg := classCfg(t, a, "hks-sections", "127.81.11.1", port, "be_hks-sections_web_80", "127.81.11.2:30080", "127.81.11.3:30080")
		cfg.Frontends[0].AcceptProxy = true
		operator, _, err := a.c.Get(ctx, dataplane.BackendPath(be), "")
		if err != nil {
			t.Fatal(err)
		}
		fes0, bes0 := names(t, a, dataplane.FrontendsPath), names(t, a, dataplane.BackendsPath)
		apply(t, d, cfg)
		got, _, err := a.c.Get(ctx, dataplane.BackendPath("be_hks-sections_web_80"), "")
		if err != nil {
			t.Fatal(err)
		}
		if !same(got["balance"], map[string]any{"algorithm": "roundrobin"}) || !same(got["server_timeout"], 60000) || !same(got["connect_timeout"], 5000) ||
			!same(got["default_server"], map[string]any{"check": "enabled", "inter": 2000, "rise": 2, "fall": 3}) {
			t.Errorf("backend %v", got)
		}
		fe, _, err := a.c.Get(ctx, dataplane.FrontendPath("fe_hks-sections_web_80"), "")
		if err != nil || fe["default_backend"] != "be_hks-sections_web_80" || fe["mode"] != "tcp" {
			t.Errorf("frontend %v (%v)", fe, err)
		}
		binds, _, err := a.c.List(ctx, dataplane.BindsPath("fe_hks-sections_web_80"), "")
		if err != nil || len(binds) != 1 || binds[0]["address"] != "127.81.11.1" || !same(binds[0]["port"], int64(port)) || binds[0]["accept_proxy"] != true {
			t.Errorf("binds %v (%v)", binds, err)
		}
		// A resync: nothing written.
		v := a.version(t)
		d.Invalidate()
		if res, err := d.Apply(ctx, cfg); err != nil || res.Ops != 0 || a.version(t) != v {
			t.Errorf("resync: ops %d err %v", res.Ops, err)
		}
		// A setting: one transaction, one reload.
		r0 := a.reloads(t)
		changed := *cfg.Backends[0] // a new backend: the applied one is never changed in place
		changed.TimeoutServer = 2 * time.Minute
		cfg.Backends = []*model.Backend{&changed}
		res, err := d.Apply(ctx, cfg)
		if err != nil || !res.Reloaded {
			t.Fatalf("setting change: %v, reloaded %v", err, res.Reloaded)
		}
		if r := a.reloads(t) - r0; r != 1 {
			t.Errorf("a setting change made %d reloads, want 1", r)
		}
		// The Service goes: its sections go, the operator's stay as they were.
		apply(t, d, model.Config{})
		fes, bes := names(t, a, dataplane.FrontendsPath), names(t, a, dataplane.BackendsPath)
		if !maps.Equal(fes, fes0) || !maps.Equal(bes, bes0) {
			t.Errorf("after the Service went: frontends %v backends %v, want %v %v", fes, bes, fes0, bes0)
		}
		if after, _, err := a.c.Get(ctx, dataplane.BackendPath(be), ""); err != nil || !same(after, operator) {
			t.Errorf("the operator's backend changed: %v → %v (%v)", operator, after, err)
		}
	})
}

func names(t *testing.T, a *api, path string) map[string]bool {
	t.Helper()
	objs, _, err := a.c.List(context.Background(), path, "")
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]bool{}
	for _, o := range objs {
		out[fmt.Sprint(o["name"])] = true
	}
	return out
}
