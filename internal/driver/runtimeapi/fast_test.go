package runtimeapi

import (
	"context"
	"fmt"
	"math/rand/v2"
	"net/netip"
	"os"
	"reflect"
	"slices"
	"sync/atomic"
	"testing"
	"time"

	"github.com/haproxy-k8s-sync/haproxy-k8s-sync/internal/haproxy"
	"github.com/haproxy-k8s-sync/haproxy-k8s-sync/internal/haproxy/haproxytest"
	"github.com/haproxy-k8s-sync/haproxy-k8s-sync/internal/model"
	"github.com/haproxy-k8s-sync/haproxy-k8s-sync/internal/plan"
	"github.com/haproxy-k8s-sync/haproxy-k8s-sync/internal/render"
)

// Passes that change only some backends' servers (Config.Changes set) take
// the fast path, and HAProxy ends up with exactly the desired servers, in
// the slots the general assignment would give, without a reload.
func TestApplyServersOnly(t *testing.T) {
	lb := startLab(t)
	p, d := lb.p, lb.d
	var fast atomic.Int64 // passes applied by the servers-only path
	d.opts.onServersOnly = func() { fast.Add(1) }
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()

	rng := rand.New(rand.NewPCG(7, 8))
	pool := func() []model.Server {
		var out []model.Server
		for i := range 5 {
			if rng.IntN(2) == 0 {
				out = append(out, model.Server{Addr: netip.AddrFrom4([4]byte{10, 1, 0, byte(i + 1)}), Port: 30000, Drain: rng.IntN(5) == 0})
			}
		}
		return out
	}
	var cfg model.Config
	for i := range 6 {
		name := fmt.Sprintf("b%d", i)
		cfg.Frontends = append(cfg.Frontends, model.Frontend{Name: "fe_" + name, Backend: "be_" + name,
			Binds: []model.Bind{{Addr: netip.MustParseAddr("127.0.0.1"), Port: uint16(haproxytest.FreePort(t))}}})
		var all []model.Server // five servers: eight slots, room for any pick
		for j := range 5 {
			all = append(all, model.Server{Addr: netip.AddrFrom4([4]byte{10, 1, 0, byte(j + 1)}), Port: 30000})
		}
		cfg.Backends = append(cfg.Backends, &model.Backend{Name: "be_" + name, Balance: "roundrobin", Servers: all})
	}
	if _, err := d.Apply(ctx, cfg); err != nil {
		t.Fatal(err)
	}
	// Persistence runs meanwhile: it must copy the layout that server-only
	// passes update in place (run with -race).
	pctx, stop := context.WithCancel(ctx)
	persisted := make(chan struct{})
	go func() { d.Run(pctx, time.Millisecond, 5*time.Millisecond); close(persisted) }()
	defer func() { stop(); <-persisted }()
	for step := range 40 {
		prev := cfg
		next := model.Config{Frontends: prev.Frontends, Backends: slices.Clone(prev.Backends)}
		ch := &model.Changes{Base: prev.Backends}
		for i := range next.Backends {
			if rng.IntN(3) == 0 {
				next.Backends[i] = next.Backends[i].WithServers(pool())
				ch.Backends = append(ch.Backends, i)
			}
		}
		next.Changes = ch
		wantLayout, _ := plan.AssignFrom(next, prev, d.layout, false)
		before := fast.Load()
		res, err := d.Apply(ctx, next)
		if err != nil {
			t.Fatalf("step %d: %v", step, err)
		}
		if res.Reloaded || fast.Load() != before+1 {
			t.Fatalf("step %d: reloaded %v, fast path taken %d times", step, res.Reloaded, fast.Load()-before)
		}
		if !reflect.DeepEqual(d.layout, wantLayout) {
			t.Fatalf("step %d: layout %v, general path gives %v", step, d.layout, wantLayout)
		}
		assertServing(t, ctx, p.StatsSocket, next)
		cfg = next
	}
	// The file on disk catches up with the last pass.
	want := render.ConfigWithHash(cfg, d.layout, d.opts.Render, d.hash)
	deadline := time.Now().Add(10 * time.Second)
	for {
		got, _ := os.ReadFile(lb.cfgPath)
		if string(got) == string(want) {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("persisted config never matched the last pass:\n%s", got)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// assertServing compares HAProxy's slots in service with cfg's servers.
func assertServing(t *testing.T, ctx context.Context, socket string, cfg model.Config) {
	t.Helper()
	rt := haproxy.NewRuntime(socket)
	defer rt.Close()
	states, err := rt.ShowServersState(ctx)
	if err != nil {
		t.Fatal(err)
	}
	got := map[string][]model.Server{}
	for _, s := range states {
		if !s.Maint() {
			got[s.Backend] = append(got[s.Backend], model.Server{Addr: s.Addr, Port: s.Port, Drain: s.Drain()})
		}
	}
	for _, be := range cfg.Backends {
		g := got[be.Name]
		slices.SortFunc(g, func(a, b model.Server) int { return a.Key().Compare(b.Key()) })
		if len(g) != len(be.Servers) || (len(g) > 0 && !reflect.DeepEqual(g, be.Servers)) {
			t.Fatalf("backend %s serves %v, want %v", be.Name, g, be.Servers)
		}
	}
}
