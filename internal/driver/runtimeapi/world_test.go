package runtimeapi

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"net/netip"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/haproxy-k8s-sync/haproxy-k8s-sync/internal/desired/desiredtest"
	"github.com/haproxy-k8s-sync/haproxy-k8s-sync/internal/driver"
	"github.com/haproxy-k8s-sync/haproxy-k8s-sync/internal/haproxy"
	"github.com/haproxy-k8s-sync/haproxy-k8s-sync/internal/haproxy/haproxytest"
	"github.com/haproxy-k8s-sync/haproxy-k8s-sync/internal/model"
)

// The incremental passes of a world whose Nodes and EndpointSlices change
// at random, applied one after another as the controller applies them
// (Config.Changes, the servers-only path, passes cut short because a newer
// change waits, the periodic Verify), leave HAProxy serving exactly what a
// pass over the same world from scratch says, after every pass that ran to
// its end (issue 36): a node that may not serve is in service in no
// backend, whatever the Service's check, targets or traffic policy.
//
// HKS_INCREMENTAL_SEED=N runs seed N alone; a failure prints its seed
// and the events that led to it.
func TestIncrementalPassesOnHAProxy(t *testing.T) {
	for _, seed := range desiredtest.Seeds(t, 1, 2, 3) {
		// Odd seeds hold reloads back (--min-reload-interval,
		// --reload-settle): the passes meanwhile apply what the Runtime
		// API can, and the model waits for the reload.
		gated := seed%2 == 1
		t.Run(fmt.Sprint("seed", seed, "-gated=", gated), func(t *testing.T) { incrementalOnHAProxy(t, seed, 120, gated) })
	}
}

func incrementalOnHAProxy(t *testing.T, seed uint64, steps int, gated bool) {
	lb := startLab(t)
	d := lb.d
	d.opts.opsWindow = 2 // a pass of more than two operations may be cut short
	if gated {
		d.gate.minInterval, d.gate.settle = 300*time.Millisecond, 100*time.Millisecond
	}
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	// Verify and persistence run beside the passes, as in the controller:
	// Verify reads HAProxy's state while passes change it.
	bctx, stop := context.WithCancel(ctx)
	var wg sync.WaitGroup
	wg.Go(func() { d.Run(bctx, time.Millisecond, 5*time.Millisecond) })
	wg.Go(func() {
		for bctx.Err() == nil {
			if _, err := d.Verify(bctx); err != nil && bctx.Err() == nil {
				t.Errorf("verify: %v", err)
				return
			}
			select {
			case <-bctx.Done():
			case <-time.After(3 * time.Millisecond):
			}
		}
	})
	defer func() { stop(); wg.Wait() }()
	w := desiredtest.NewAt(seed, netip.MustParseAddr("127.0.0.1"), func() int32 { return int32(haproxytest.FreePort(t)) })
	rng := rand.New(rand.NewPCG(seed, 7))
	// apply applies the last pass; false: its reload was held back.
	apply := func(actx context.Context) bool {
		t.Helper()
		_, err := d.Apply(actx, w.Last.Config)
		if errors.Is(err, driver.ErrDeferred) {
			w.Note("  (reload held back)")
			return false
		}
		if err != nil {
			t.Fatalf("apply: %v\n%s", err, w.Log(12))
		}
		return true
	}
	// settle applies the last pass until its reload is made, as the
	// loop's timer does when no newer change comes first.
	settle := func() {
		t.Helper()
		deadline := time.Now().Add(10 * time.Second)
		for !apply(ctx) {
			if time.Now().After(deadline) {
				t.Fatal("reload held back for 10s")
			}
			time.Sleep(20 * time.Millisecond)
		}
	}
	settle()
	checkServing(t, ctx, lb.p.StatsSocket, w)
	cut := 0
	for step := range steps {
		w.Step()
		actx := ctx
		if rng.IntN(3) == 0 {
			// A newer change is already waiting: the pass may stop after
			// its first operations and leave the rest to the next pass.
			actx = driver.WithPreempt(ctx, func() bool { return true })
			w.Note("  (applied with a newer change waiting)")
			apply(actx)
			cut++
			continue // HAProxy may lag until the next pass
		}
		if !apply(actx) {
			continue // a newer change comes before the reload
		}
		if rng.IntN(8) == 0 {
			if _, err := d.Verify(ctx); err != nil {
				t.Fatal(err)
			}
			w.Note("  (verified)")
		}
		if msg := servingDiff(ctx, lb.p.StatsSocket, w); msg != "" {
			t.Fatalf("step %d: HAProxy differs from the whole world:\n%s\n%s", step, msg, w.Log(14))
		}
	}
	settle()
	checkServing(t, ctx, lb.p.StatsSocket, w)
	if cut == 0 || w.Fast == 0 {
		t.Fatalf("passes cut short: %d, incremental: %d", cut, w.Fast)
	}
}

func checkServing(t *testing.T, ctx context.Context, socket string, w *desiredtest.World) {
	t.Helper()
	if msg := servingDiff(ctx, socket, w); msg != "" {
		t.Fatalf("HAProxy differs from the whole world:\n%s\n%s", msg, w.Log(14))
	}
}

// servingDiff compares the servers in service in HAProxy (show servers
// state: not in maintenance, set or inherited from the node followed)
// with those of a pass over the world from scratch; "" when they agree.
func servingDiff(ctx context.Context, socket string, w *desiredtest.World) string {
	want := desiredtest.Serving(w.Whole().Config)
	rt := haproxy.NewRuntime(socket)
	defer rt.Close()
	states, err := rt.ShowServersState(ctx)
	if err != nil {
		return err.Error()
	}
	byBackend := map[string][]model.Server{}
	for _, s := range states {
		if !s.Maint() {
			byBackend[s.Backend] = append(byBackend[s.Backend], model.Server{Addr: s.Addr, Port: s.Port, Drain: s.Drain()})
		}
	}
	var names []string
	for name := range want {
		names = append(names, name)
	}
	slices.Sort(names)
	var b strings.Builder
	for _, name := range names {
		got := byBackend[name]
		slices.SortFunc(got, func(a, b model.Server) int { return a.Key().Compare(b.Key()) })
		if g := desiredtest.List(got); g != want[name] {
			fmt.Fprintf(&b, "  %s: HAProxy serves [%s], want [%s]\n", name, g, want[name])
		}
	}
	return b.String()
}
