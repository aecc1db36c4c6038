package runtimeapi

import (
	"context"
	"fmt"
	"net/netip"
	"slices"
	"sync/atomic"
	"testing"
	"time"

	"github.com/haproxy-k8s-sync/haproxy-k8s-sync/internal/haproxy"
	"github.com/haproxy-k8s-sync/haproxy-k8s-sync/internal/model"
)

// TestFilledSlotWaitsForItsCheck: with a pool, a Service's servers checked
// by themselves come into service only once their check passes, whether a
// spare's slot is filled for them (a new Service, no reload) or a server
// comes back to its slot (a servers-only pass): a server that refuses
// connections is never UP, and never answers a client; one that accepts
// them is UP after its check. Before, a filled slot read UP at once (its
// health set to rise as it left maintenance) and a returning node's server
// took connections before its kube-proxy had the Service's endpoint
// (TestRealNodeHealth, tproxy mode).
func TestFilledSlotWaitsForItsCheck(t *testing.T) {
	lb := startPoolLab(t, 0)
	var fast atomic.Int64
	lb.d.opts.onServersOnly = func() { fast.Add(1) }
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	w := newPoolWorld(t)
	// Nothing listens there: refused at once, its check fails.
	dead := model.Server{Addr: netip.MustParseAddr("127.81.0.9"), Port: w.port}
	// Rise 3: the live server reads UP only 3 checks after its slot is
	// filled, time enough to see both held first even on a loaded machine.
	chk := model.Check{Enabled: true, Inter: 200 * time.Millisecond, Rise: 3, Fall: 2}
	config := func(l1 []string, withDead bool) model.Config {
		cfg := w.config(l1, map[string]int{"be_a": 0, "be_new": 1})
		for i, b := range cfg.Backends {
			c := *b
			c.Check = chk
			if withDead && c.Name == "be_new" {
				c.Servers = append(slices.Clone(c.Servers), dead)
			}
			cfg.Backends[i] = &c
		}
		return cfg
	}
	// The class of checked backends is in use: its free spares are there
	// before be_new comes.
	cfg := config([]string{"be_a"}, false)
	for range 2 { // the growth reload, then a pass on the pool it made
		if _, err := lb.d.Apply(ctx, cfg); err != nil {
			t.Fatal(err)
		}
	}
	noReload := lb.noReload(ctx, t)
	rt := haproxy.NewRuntime(lb.p.StatsSocket) // a connection of its own
	defer rt.Close()
	// states is be_new's slots in service, by address.
	states := func() map[netip.Addr]haproxy.ServerState {
		t.Helper()
		all, err := rt.ShowServersState(ctx)
		if err != nil {
			t.Fatal(err)
		}
		out := map[netip.Addr]haproxy.ServerState{}
		for _, s := range all {
			if s.Backend == lb.d.HAProxyBackend("be_new") && !s.Maint() {
				out[s.Addr] = s
			}
		}
		return out
	}
	live := netip.MustParseAddr(w.nodes[1].IP)
	// watch polls be_new's slots until live is UP (live false: for the
	// whole window) and fails the test whenever the dead server reads UP.
	watch := func(step string, window time.Duration, untilLive bool) {
		t.Helper()
		deadline := time.Now().Add(window)
		for {
			st := states()
			if s, ok := st[dead.Addr]; !ok {
				t.Fatalf("%s: the dead server is not in service in %s: %v", step, lb.d.HAProxyBackend("be_new"), st)
			} else if s.Up() {
				t.Fatalf("%s: %s/%s, a server whose check fails, is UP (op state %d)", step, s.Backend, s.Server, s.OpState)
			}
			if untilLive && st[live].Up() {
				return
			}
			if time.Now().After(deadline) {
				if untilLive {
					t.Fatalf("%s: %v not UP within %v of its check passing: %v", step, live, window, st)
				}
				return
			}
			time.Sleep(20 * time.Millisecond) // poll interval, bounded by the deadline
		}
	}
	// bothFine: every connection to L1 answered by be_a's or be_new's
	// live server, never sent to the dead one.
	bothFine := func(step string) {
		t.Helper()
		if got := w.answers(20); got["node-0"]+got["node-1"] != 20 || got["node-1"] == 0 {
			t.Fatalf("%s: L1 answered %v, want node-0 and node-1 only", step, got)
		}
	}

	// A new Service: be_new takes a free spare, its slots filled at
	// runtime, each held until its own check passes.
	next := config([]string{"be_a", "be_new"}, true)
	noReload("a new backend", next)
	if sp := lb.d.HAProxyBackend("be_new"); sp == "be_new" {
		t.Fatal("be_new took no spare")
	}
	if st := states(); st[live].Up() || st[dead.Addr].Up() {
		t.Fatalf("a new backend: filled slots UP before any check: %v", st)
	}
	watch("a new backend", 10*time.Second, true)
	watch("a new backend, live UP", 6*chk.Inter, false)
	bothFine("a new backend")

	// The dead server leaves and comes back to the slot that remembers
	// it, in servers-only passes.
	cfg = next
	i := slices.IndexFunc(cfg.Backends, func(b *model.Backend) bool { return b.Name == "be_new" })
	for step, servers := range [][]model.Server{cfg.Backends[i].Servers[:1], cfg.Backends[i].Servers} {
		next := model.Config{Frontends: cfg.Frontends, Backends: slices.Clone(cfg.Backends)}
		next.Backends[i] = cfg.Backends[i].WithServers(servers)
		next.Changes = &model.Changes{Base: cfg.Backends, Backends: []int{i}}
		before := fast.Load()
		noReload(fmt.Sprint("servers-only pass ", step), next)
		if fast.Load() != before+1 {
			t.Fatalf("servers-only pass %d: not taken by the servers-only path", step)
		}
		cfg = next
	}
	if st := states(); !st[live].Up() {
		t.Fatalf("a returning server: the live server, untouched, is not UP: %v", st)
	}
	watch("a returning server", 6*chk.Inter, false)
	bothFine("a returning server")
}
