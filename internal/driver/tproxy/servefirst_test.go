package tproxy

import (
	"context"
	"errors"
	"fmt"
	"net/netip"
	"os"
	"path/filepath"
	"slices"
	"testing"
	"time"

	"github.com/haproxy-k8s-sync/haproxy-k8s-sync/internal/driver"
	"github.com/haproxy-k8s-sync/haproxy-k8s-sync/internal/driver/runtimeapi"
	"github.com/haproxy-k8s-sync/haproxy-k8s-sync/internal/haproxy/haproxytest"
	"github.com/haproxy-k8s-sync/haproxy-k8s-sync/internal/model"
	"github.com/haproxy-k8s-sync/haproxy-k8s-sync/internal/render"
	"github.com/haproxy-k8s-sync/haproxy-k8s-sync/internal/spares"
	"github.com/haproxy-k8s-sync/haproxy-k8s-sync/internal/testing/netlab"
)

// slowReload is how much longer every reload takes in
// TestServedBeforeGrowthReload: long enough that a Service served only by
// the growth's reload is told apart from one served before it.
const slowReload = 2 * time.Second

// TestServedBeforeGrowthReload (issue 29): a Service that arrives with no
// servers takes a free spare; when its servers come and do not fit, it
// moves to the class's free large spare with a map change, and the pool
// then grows another large spare ahead of need with a reload in the same
// pass (no settle time here). The Service is answered before that reload,
// not by it: the pass serves first and grows after (applyPooled). That
// growth sizes the class's free spares to its backends, so a Service
// whose servers then outgrow its spare moves into one with no reload.
// Every reload is made
// slower (slowReload), so that an answer that waits for the
// reload comes after the pass ends. Last, a Service new in the pass that
// grows the pool: its set element too is added before the reload.
func TestServedBeforeGrowthReload(t *testing.T) {
	slowReloads(t, "", "")
	l := startDPWith(t, render.ListenersTProxy, spares.Policy{Spares: 3, Other: 1, LowWater: 1})
	svc := l.outgrowing(t)
	cfgOf := func(fes []model.Frontend, bes ...*model.Backend) model.Config {
		return model.Config{Frontends: fes, Backends: bes}
	}
	feA, beA := svc("a", 80, 1)
	l.apply(t, cfgOf([]model.Frontend{feA}, beA))
	expect(t, map[netip.AddrPort]string{netip.AddrPortFrom(vipA, 80): "s0"}, l.lab.Client, netip.Addr{})

	// b arrives with no servers: a free spare of plan4 slots, no reload.
	before := l.reloads(t)
	feB, beB0 := svc("b", 81, 0)
	l.apply(t, cfgOf([]model.Frontend{feA, feB}, beA, beB0))
	if after := l.reloads(t); after != before {
		t.Fatalf("a new Service with no servers in a free spare: %d reloads, want 0", after-before)
	}

	// servedFirst applies cfg and checks that port is answered (by the
	// server named want, when not "") before the pass, which grows the
	// pool, ends.
	servedFirst := func(what string, cfg model.Config, port uint16, want string) {
		t.Helper()
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		defer cancel()
		type result struct {
			res driver.Result
			err error
			at  time.Duration
		}
		done := make(chan result, 1)
		start := time.Now()
		go func() {
			res, err := l.drv.Apply(ctx, cfg)
			done <- result{res, err, time.Since(start)}
		}()
		dst := netip.AddrPortFrom(vipA, port)
		var answered time.Duration
		err := netlab.Eventually(ctx, 30*time.Second, func() error {
			if got, err := ask(l.lab.Client, netip.Addr{}, dst); got == "" || want != "" && got != want {
				return fmt.Errorf("%s: answered %q (%v), want %q", dst, got, err, want)
			}
			answered = time.Since(start)
			return nil
		})
		r := <-done
		if err != nil || r.err != nil {
			t.Fatalf("%s: %v; the pass: %v", what, err, r.err)
		}
		t.Logf("%s: answered after %v, the pass ended after %v (reloaded %v: %v)", what, answered, r.at, r.res.Reloaded, r.res.Reasons)
		if !r.res.Reloaded {
			t.Fatalf("%s: the pool did not grow in the same pass: the test no longer exercises serve-first", what)
		}
		if answered >= r.at || answered >= slowReload {
			t.Errorf("%s: first answered after %v, the growth's reload pass ended after %v: served by the reload, not before it",
				what, answered, r.at)
		}
	}

	// b's servers come: 5 do not fit its spare; it moves to the large one.
	_, beB := svc("b", 81, plan4+1)
	servedFirst("a new Service's servers that do not fit its spare", cfgOf([]model.Frontend{feA, feB}, beA, beB), 81, "")

	// a outgrows its spare the same way: that growth sized the class's
	// free spares to its backends (5 servers: 8 slots, spares/sized.go),
	// so a moves into one with a map change and no growth: answered by
	// its new fifth server with no reload.
	_, beA5 := svc("a", 80, plan4+1)
	before = l.reloads(t)
	l.apply(t, cfgOf([]model.Frontend{feA, feB}, beA5, beB))
	expect(t, map[netip.AddrPort]string{netip.AddrPortFrom(vipA, 80): fmt.Sprintf("s%d", plan4)}, l.lab.Client, netip.Addr{})
	if after := l.reloads(t); after != before {
		t.Errorf("a Service outgrowing its spare into a free one of the class's size: %d reloads, want 0", after-before)
	}

	// c arrives with its servers in one pass, new to the kernel's set too:
	// its element goes in with the serve-first apply, not after the
	// growth's reload (Ordered, driver.WithServed). d and e come in the
	// same pass: e takes the class's free large spare (the sized ones
	// taken), so the pass grows the pool.
	feC, beC := svc("c", 82, plan4+1)
	feD, beD := svc("d", 83, plan4+1)
	feE, beE := svc("e", 84, plan4+1)
	servedFirst("a new Service whose pass grows the pool",
		cfgOf([]model.Frontend{feA, feB, feC, feD, feE}, beA5, beB, beC, beD, beE), 82, "")
}

// slowReloads has the HAProxy that tests start from now on take
// slowReload longer over every reload. The master re-executes argv[0] on
// a reload: a wrapper named so sleeps there (HAProxy sets
// HAPROXY_MWORKER_REEXEC), not at the start. With mark, the wrapper
// creates that file when a reload begins; with fail, a reload while that
// file exists fails (the master keeps the old workers: a config file
// that cannot be read).
func slowReloads(t *testing.T, mark, fail string) {
	wrapper := filepath.Join(t.TempDir(), "haproxy-slow-reload")
	touch, bad := "", ""
	if mark != "" {
		touch = fmt.Sprintf("touch %s; ", mark)
	}
	if fail != "" {
		// The master re-executes with the argv it has: a missing file
		// added once is taken out again before it is added or not.
		bad = fmt.Sprintf("args=(); prev=; for a in \"$@\"; do if [ \"$prev\" = -f ] && [ \"$a\" = %[1]s.missing ]; then unset 'args[${#args[@]}-1]'; else args+=(\"$a\"); fi; prev=$a; done; set -- \"${args[@]}\"\n"+
			"[ -n \"$HAPROXY_MWORKER_REEXEC\" ] && [ -e %[1]s ] && set -- \"$@\" -f %[1]s.missing\n", fail)
	}
	script := fmt.Sprintf("#!/bin/bash\n[ -n \"$HAPROXY_MWORKER_REEXEC\" ] && { %ssleep %d; }\n%sexec -a %s %s \"$@\"\n",
		touch, int(slowReload/time.Second), bad, wrapper, haproxytest.Bin())
	if err := os.WriteFile(wrapper, []byte(script), 0o755); err != nil {
		t.Fatal(err)
	}
	t.Setenv("HAPROXY_BIN", wrapper)
}

// TestNewServicesWhileLargeGrowthDeferred (issue 29, new29's 1,000-Service
// run): new Services one after another, each arriving with no servers and
// then getting more than a free spare's slots, while the reload gate holds
// the pool's growth back (a settle time, as run has): each is served with
// no reload, the one that finds the class's large spare taken included.
func TestNewServicesWhileLargeGrowthDeferred(t *testing.T) {
	l := startDPWith(t, render.ListenersTProxy, spares.Policy{Spares: 6, Other: 1, LowWater: 1})
	hopts := l.hopts
	hopts.ReloadSettle = time.Hour
	hd := runtimeapi.NewHAProxy(hopts)
	t.Cleanup(func() { _ = hd.Close() })
	l.hd, l.drv.HAProxy = hd, hd
	svc := l.outgrowing(t)
	// a has one server, so the class's free spares are sized to plan4
	// slots (spares sized to their class): the new Services' five do not
	// fit them.
	feA, beA := svc("a", 80, 1)
	cfg := model.Config{Frontends: []model.Frontend{feA}, Backends: []*model.Backend{beA}}
	l.apply(t, cfg)
	before := l.reloads(t)
	ctx := context.Background()
	fewer := map[string]bool{} // Services reported served by fewer servers
	for i := range 4 {
		name, port := fmt.Sprintf("n%d", i), uint16(100+i)
		fe, be0 := svc(name, port, 0)
		_, be := svc(name, port, plan4+1)
		for _, b := range []*model.Backend{be0, be} {
			next := model.Config{Frontends: append(slices.Clone(cfg.Frontends), fe), Backends: append(slices.Clone(cfg.Backends), b)}
			res, err := l.drv.Apply(ctx, next)
			if err != nil && !errors.Is(err, driver.ErrDeferred) {
				t.Fatalf("%s with %d servers: %v", name, len(b.Servers), err)
			}
			t.Logf("%s with %d servers: %v (refused %v), in %s", name, len(b.Servers), err, res.Refused, hd.HAProxyBackend(b.Name))
			for _, r := range res.Refused {
				if r.Reason == runtimeapi.ReasonServedByFewerServers {
					fewer[r.Service] = true
					if !r.Served {
						t.Errorf("%s: %v not said to be served", r.Service, r.Err)
					}
				}
			}
		}
		cfg = model.Config{Frontends: append(slices.Clone(cfg.Frontends), fe), Backends: append(slices.Clone(cfg.Backends), be)}
		expect(t, map[netip.AddrPort]string{netip.AddrPortFrom(vipA, port): "s0"}, l.lab.Client, netip.Addr{})
	}
	if after := l.reloads(t); after != before {
		t.Errorf("new Services while the growth is held back: %d reloads, want 0", after-before)
	}

	// The growth's reload (a restarted controller's first pass waits for
	// nothing) gives every Service all its servers: n1, cut to its small
	// spare's slots meanwhile, is answered by its fifth.
	if !fewer["default/n1"] {
		t.Errorf("n1, cut to its small spare's slots, not reported served by fewer servers (reported: %v)", fewer)
	}
	hopts.ReloadSettle = 0
	l.restart(t, hopts)
	res, err := l.drv.Apply(ctx, cfg)
	if err != nil {
		t.Fatal(err)
	}
	if i := slices.IndexFunc(res.Refused, func(r driver.Refusal) bool { return r.Reason == runtimeapi.ReasonServedByFewerServers }); i >= 0 {
		t.Errorf("after the growth, every Service whole, yet reported: %v", res.Refused[i].Err)
	}
	err = netlab.Eventually(ctx, 10*time.Second, func() error {
		if got, err := ask(l.lab.Client, netip.Addr{}, netip.AddrPortFrom(vipA, 101)); got != fmt.Sprintf("s%d", plan4) {
			return fmt.Errorf("n1 answered %q (%v), want its fifth server", got, err)
		}
		return nil
	})
	if err != nil {
		t.Error(err)
	}
}

// outgrowing starts plan4+1 servers answering s0, s1, ... and returns a
// Service port on vipA with the first n of them: more than a free
// spare's slots when n is plan4+1.
func (l *dpLab) outgrowing(t *testing.T) func(name string, port uint16, n int) (model.Frontend, *model.Backend) {
	var servers []model.Server
	for i := range plan4 + 1 {
		servers = append(servers, model.Server{Addr: netip.MustParseAddr("127.0.0.1"), Port: answering(t, l.lab.LB, fmt.Sprintf("s%d", i))})
	}
	return func(name string, port uint16, n int) (model.Frontend, *model.Backend) {
		return model.Frontend{Name: "fe_" + name, Service: "default/" + name, Backend: "be_" + name, Binds: []model.Bind{bind(vipA, port)}},
			&model.Backend{Name: "be_" + name, Service: "default/" + name, Balance: "roundrobin", Servers: servers[:n]}
	}
}

// restart replaces the lab's HAProxy driver by a new one with opts, as a
// restarted controller's: the kernel's and HAProxy's state read back.
func (l *dpLab) restart(t *testing.T, opts runtimeapi.Options) {
	hd := runtimeapi.NewHAProxy(opts)
	t.Cleanup(func() { _ = hd.Close() })
	l.drv.Invalidate()
	l.hd, l.drv.HAProxy = hd, hd
}
