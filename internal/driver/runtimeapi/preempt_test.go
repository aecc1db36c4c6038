package runtimeapi

import (
	"context"
	"fmt"
	"github.com/haproxy-k8s-sync/haproxy-k8s-sync/internal/driver"
	"net/netip"
	"slices"
	"testing"
	"time"

	"github.com/haproxy-k8s-sync/haproxy-k8s-sync/internal/haproxy"
	"github.com/haproxy-k8s-sync/haproxy-k8s-sync/internal/model"
)

// A server-only pass told that a newer pass waits stops between chunks;
// the next pass, with nothing new or with a structural change, brings
// HAProxy to what the stopped pass wanted.
func TestApplyServersPreempted(t *testing.T) {
	for _, next := range []string{"nothing new", "new backend (reload)"} {
		t.Run(next, func(t *testing.T) {
			lb := startLab(t)
			p, d := lb.p, lb.d
			ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
			defer cancel()
			srv := func(b, i int) model.Server {
				return model.Server{Addr: netip.AddrFrom4([4]byte{10, byte(b >> 8), byte(b), byte(i)}), Port: 30000}
			}
			const backends = 150 // 4 operations each below: past one chunk
			var cfg model.Config
			for b := range backends {
				cfg.Backends = append(cfg.Backends, &model.Backend{Name: fmt.Sprintf("be_%03d", b), Balance: "roundrobin",
					Servers: []model.Server{srv(b, 1), srv(b, 2), srv(b, 3), srv(b, 4)}})
			}
			if _, err := d.Apply(ctx, cfg); err != nil {
				t.Fatal(err)
			}
			want := model.Config{Backends: slices.Clone(cfg.Backends), Changes: &model.Changes{Base: cfg.Backends}}
			for b := range want.Backends { // every server is replaced
				want.Backends[b] = want.Backends[b].WithServers([]model.Server{srv(b, 5), srv(b, 6), srv(b, 7), srv(b, 8)})
				want.Changes.Backends = append(want.Changes.Backends, b)
			}
			newer := func() bool { return true }
			res, err := d.Apply(driver.WithPreempt(ctx, newer), want)
			if err != nil || res.Reloaded {
				t.Fatalf("preempted pass: reloaded %v, %v", res.Reloaded, err)
			}
			if res.Ops != opsWindow || len(d.unsent) == 0 {
				t.Fatalf("preempted pass sent %d operations, left %d backends; want one window of %d", res.Ops, len(d.unsent), opsWindow)
			}

			after := model.Config{Backends: want.Backends} // the next pass's desired
			if next != "nothing new" {
				after.Backends = append(slices.Clone(want.Backends), &model.Backend{Name: "be_new", Balance: "roundrobin"})
			}
			res, err = d.Apply(ctx, after)
			if err != nil {
				t.Fatal(err)
			}
			if res.Reloaded != (next != "nothing new") || len(d.unsent) != 0 {
				t.Fatalf("next pass: reloaded %v, %d backends still left", res.Reloaded, len(d.unsent))
			}
			assertServing(t, ctx, p.StatsSocket, after)
		})
	}
}

// Passes cut short one after another (a stream of newer changes) still
// bring every backend left behind to what it should run: the next pass
// sends the oldest left-behind operations first, so newer changes to
// backends whose names sort first (the _nodes backend sorts before every
// Service's) cannot hold back the others for as long as the stream lasts.
func TestLeftBehindSentFirst(t *testing.T) {
	lb := startLab(t)
	p, d := lb.p, lb.d
	d.opts.opsWindow = 2
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	srv := func(b, i int) model.Server {
		return model.Server{Addr: netip.AddrFrom4([4]byte{10, 9, byte(b), byte(i)}), Port: 30000}
	}
	names := []string{"be_a", "be_b", "be_y", "be_z"}
	var cfg model.Config
	for b, name := range names {
		cfg.Backends = append(cfg.Backends, &model.Backend{Name: name, Balance: "roundrobin",
			Servers: []model.Server{srv(b, 1), srv(b, 2), srv(b, 3), srv(b, 4)}})
	}
	if _, err := d.Apply(ctx, cfg); err != nil {
		t.Fatal(err)
	}
	newer := driver.WithPreempt(ctx, func() bool { return true })
	change := func(prev model.Config, which []int, first int) model.Config {
		next := model.Config{Backends: slices.Clone(prev.Backends), Changes: &model.Changes{Base: prev.Backends}}
		for _, b := range which {
			next.Backends[b] = next.Backends[b].WithServers([]model.Server{srv(b, first), srv(b, first+1)})
			next.Changes.Backends = append(next.Changes.Backends, b)
		}
		return next
	}
	// be_y and be_z change; the pass is cut short after two operations.
	cfg = change(cfg, []int{2, 3}, 10)
	if _, err := d.Apply(newer, cfg); err != nil {
		t.Fatal(err)
	}
	wantZ := cfg.Backends[3].Servers
	// Then every pass changes be_a and be_b and is cut short too.
	for i := range 12 {
		cfg = change(cfg, []int{0, 1}, 20+2*i)
		if _, err := d.Apply(newer, cfg); err != nil {
			t.Fatal(err)
		}
	}
	rt := haproxy.NewRuntime(p.StatsSocket)
	defer rt.Close()
	states, err := rt.ShowServersState(ctx)
	if err != nil {
		t.Fatal(err)
	}
	var got []model.Server
	for _, s := range states {
		if s.Backend == "be_z" && !s.Maint() {
			got = append(got, model.Server{Addr: s.Addr, Port: s.Port})
		}
	}
	slices.SortFunc(got, func(a, b model.Server) int { return a.Key().Compare(b.Key()) })
	if !slices.Equal(got, wantZ) {
		t.Fatalf("be_z serves %v after 12 more passes cut short, want %v (left behind: %v)", got, wantZ, d.unsent)
	}
}
