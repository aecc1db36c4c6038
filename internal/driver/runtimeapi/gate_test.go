package runtimeapi

import (
	"context"
	"errors"
	"github.com/haproxy-k8s-sync/haproxy-k8s-sync/internal/driver"
	"net/netip"
	"testing"
	"time"

	"github.com/haproxy-k8s-sync/haproxy-k8s-sync/internal/haproxy/haproxytest"
	"github.com/haproxy-k8s-sync/haproxy-k8s-sync/internal/model"
)

func TestReloadGate(t *testing.T) {
	const (
		minInterval = 500 * time.Millisecond
		settle      = 300 * time.Millisecond
	)
	t0 := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	at := func(ms int) time.Time { return t0.Add(time.Duration(ms) * time.Millisecond) }
	ms := func(n int) time.Duration { return time.Duration(n) * time.Millisecond }
	// Each step is a pass at some time: wants a reload for a change seen
	// at changed (want), needs none (none), or a reload ends (reloaded).
	type step struct {
		op      string // "want", "none", "reloaded"
		at      int    // ms after t0
		changed int    // ms after t0; -1: not known
		wait    time.Duration
	}
	for _, tc := range []struct {
		name         string
		last         int // ms after t0 of the last reload's end; -1: none yet
		settle, minI time.Duration
		steps        []step
	}{
		{"the first reload after a start: at once", -1, settle, minInterval, []step{
			{"want", 0, 0, 0}, {"reloaded", 100, 0, 0}, {"want", 10_000, 10_000, ms(300)},
		}},
		{"a fresh change waits the settle time", 0, settle, minInterval, []step{
			{"want", 1_000, 1_000, ms(300)}, {"want", 1_100, 1_100, ms(200)}, {"want", 1_300, 1_250, 0},
		}},
		{"counted from when the change was seen, not from the pass", 0, settle, minInterval, []step{
			{"want", 10_190, 10_000, ms(110)}, {"want", 10_250, 10_020, ms(50)}, {"want", 10_300, -1, 0},
		}},
		{"not known: counted from the pass", 0, settle, minInterval, []step{
			{"want", 10_000, -1, ms(300)}, {"want", 10_299, -1, ms(1)}, {"want", 10_300, -1, 0},
		}},
		{"a change that queued behind a reload: only the minimum interval", 5_000, settle, minInterval, []step{
			{"want", 5_010, 2_000, ms(490)}, {"want", 5_500, 2_000, 0},
		}},
		{"a fresh change right after a reload: the settle time", 5_000, settle, 100 * time.Millisecond, []step{
			{"want", 5_040, 5_040, ms(300)}, {"want", 5_340, 5_060, 0},
		}},
		{"the minimum interval when longer", 0, settle, minInterval, []step{
			{"want", 100, 100, ms(400)}, {"want", 450, 100, ms(50)}, {"want", 500, 100, 0},
		}},
		{"a reload that ended starts over", 0, settle, minInterval, []step{
			{"want", 5_000, 5_000, ms(300)}, {"want", 5_300, 5_000, 0}, {"reloaded", 5_600, 0, 0},
			{"want", 5_700, 5_650, ms(400)}, {"want", 6_100, 5_650, 0},
		}},
		{"no reload wanted any more: the next want starts over", 0, settle, minInterval, []step{
			{"want", 5_000, 5_000, ms(300)}, {"none", 5_100, 0, 0}, {"want", 5_200, 5_200, ms(300)},
		}},
		{"settle off: the minimum interval alone, as before", 0, 0, minInterval, []step{
			{"want", 100, 100, ms(400)}, {"want", 10_000, 10_000, 0},
		}},
		{"both off", -1, 0, 0, []step{{"want", 0, 0, 0}, {"reloaded", 1, 0, 0}, {"want", 2, 2, 0}}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			g := reloadGate{minInterval: tc.minI, settle: tc.settle}
			if tc.last >= 0 {
				g.last = at(tc.last)
			}
			for i, s := range tc.steps {
				switch s.op {
				case "want":
					var changed time.Time
					if s.changed >= 0 {
						changed = at(s.changed)
					}
					if got := g.wait(at(s.at), changed); got != s.wait {
						t.Fatalf("step %d (want at %d ms): wait %v, want %v", i, s.at, got, s.wait)
					}
				case "none":
					g.none()
				case "reloaded":
					g.reloaded(at(s.at))
				}
			}
		})
	}
}

// A new backend whose servers arrive a moment after it (a Service, then
// its EndpointSlice) is served after one reload, sized for those servers:
// the first pass defers the reload for the settle time and the second,
// within it, brings the servers. Meanwhile a server change in a running
// backend applies at once through the Runtime API.
func TestSettleSharesOneReload(t *testing.T) {
	lb := startLab(t)
	d := lb.d
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	clock := time.Now()
	d.now = func() time.Time { return clock }
	d.gate.settle, d.gate.minInterval = 300*time.Millisecond, 100*time.Millisecond

	srv := func(i int) model.Server {
		return model.Server{Addr: netip.AddrFrom4([4]byte{127, 62, 0, byte(i)}), Port: 30000}
	}
	backend := func(name string, n int) (model.Frontend, *model.Backend) {
		be := &model.Backend{Name: "be_" + name, Balance: "roundrobin"}
		for i := range n {
			be.Servers = append(be.Servers, srv(i+1))
		}
		return model.Frontend{Name: "fe_" + name, Backend: be.Name,
			Binds: []model.Bind{{Addr: netip.MustParseAddr("127.0.0.1"), Port: uint16(haproxytest.FreePort(t))}}}, be
	}
	fe, be := backend("old", 2)
	base := model.Config{Frontends: []model.Frontend{fe}, Backends: []*model.Backend{be}}
	// The first reload after a start does not wait.
	if res, err := d.Apply(ctx, base); err != nil || !res.Reloaded {
		t.Fatalf("first reload: reloaded %v, %v", res.Reloaded, err)
	}
	reloads := func() int {
		p, err := d.master.ShowProc(ctx)
		if err != nil {
			t.Fatal(err)
		}
		return p.Reloads
	}
	before := reloads()
	clock = clock.Add(10 * time.Second) // a quiet spell

	feNew, beNew := backend("new", 5) // five servers: more than the 4 slots of an empty backend
	empty := beNew.WithServers(nil)
	old := base.Backends[0].WithServers(base.Backends[0].Servers[:1]) // a server change in a running backend
	passes := []struct {
		name    string
		advance time.Duration
		cfg     model.Config
		wait    time.Duration // 0: reloads
	}{
		{"the Service, before its slice", 0,
			model.Config{Frontends: []model.Frontend{fe, feNew}, Backends: []*model.Backend{old, empty}}, 300 * time.Millisecond},
		{"its slice, 20 ms later", 20 * time.Millisecond,
			model.Config{Frontends: []model.Frontend{fe, feNew}, Backends: []*model.Backend{old, beNew}}, 280 * time.Millisecond},
		{"the settle time is over", 280 * time.Millisecond,
			model.Config{Frontends: []model.Frontend{fe, feNew}, Backends: []*model.Backend{old, beNew}}, 0},
	}
	for i, p := range passes {
		clock = clock.Add(p.advance)
		// A companion (tproxy.Ordered) learns what the running worker
		// serves only through the context: told once as a held-back
		// pass returns, the structure last applied (the new frontend is
		// not in it); never for a pass that applied whole.
		var told []model.Config
		res, err := d.Apply(driver.WithServed(ctx, func(c model.Config) { told = append(told, c) }), p.cfg)
		if p.wait > 0 {
			if !errors.Is(err, driver.ErrDeferred) || res.RetryAfter != p.wait || res.Reloaded {
				t.Fatalf("pass %d (%s): %v, retry after %v, reloaded %v; want deferred %v", i, p.name, err, res.RetryAfter, res.Reloaded, p.wait)
			}
			if len(told) != 1 || len(told[0].Frontends) != 1 || told[0].Frontends[0].Name != fe.Name {
				t.Fatalf("pass %d (%s): told served %d times (%v), want once, the running %s alone", i, p.name, len(told), frontendNames(told), fe.Name)
			}
			if i == 0 {
				// The running backend's change did not wait.
				assertServing(t, ctx, lb.p.StatsSocket, model.Config{Backends: []*model.Backend{old}})
			}
			continue
		}
		if err != nil || !res.Reloaded {
			t.Fatalf("pass %d (%s): reloaded %v, %v", i, p.name, res.Reloaded, err)
		}
		if len(told) != 0 {
			t.Fatalf("pass %d (%s) applied whole, yet told served %v", i, p.name, frontendNames(told))
		}
		assertServing(t, ctx, lb.p.StatsSocket, p.cfg)
	}
	if got := reloads() - before; got != 1 {
		t.Errorf("%d reloads for the new Service and its slice, want 1", got)
	}
	// Settled: the same config again is no change.
	if res, err := d.Apply(ctx, passes[2].cfg); err != nil || res.Reloaded || res.Ops != 0 {
		t.Errorf("same config again: reloaded %v, %d ops, %v", res.Reloaded, res.Ops, err)
	}
}

// frontendNames is the frontends' names of each model told.
func frontendNames(told []model.Config) [][]string {
	var out [][]string
	for _, c := range told {
		var names []string
		for _, f := range c.Frontends {
			names = append(names, f.Name)
		}
		out = append(out, names)
	}
	return out
}
