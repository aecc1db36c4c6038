package runtimeapi

import (
	"context"
	"fmt"
	"github.com/haproxy-k8s-sync/haproxy-k8s-sync/internal/driver"
	"net/netip"
	"slices"
	"testing"
	"time"

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
