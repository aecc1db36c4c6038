package tproxy

import (
	"context"
	"fmt"
	"net/netip"
	"testing"
	"time"

	"github.com/haproxy-k8s-sync/haproxy-k8s-sync/internal/driver"
	"github.com/haproxy-k8s-sync/haproxy-k8s-sync/internal/driver/runtimeapi"
	"github.com/haproxy-k8s-sync/haproxy-k8s-sync/internal/model"
	"github.com/haproxy-k8s-sync/haproxy-k8s-sync/internal/render"
	"github.com/haproxy-k8s-sync/haproxy-k8s-sync/internal/spares"
	"github.com/haproxy-k8s-sync/haproxy-k8s-sync/internal/testing/netlab"
)

// BenchmarkNewPort: the time from applying a model with one more port of
// an existing Service (its backend in HAProxy already) to that port's
// first connection answered through HAProxy, from the client namespace,
// in each listener mode side by side: ports (a new frontend: a reload)
// and tproxy (a map entry and a set element). tproxy+pool adds a new
// Service instead (a new backend, every other one restricted) with
// --backend-pool: a spare's slots, its source-range files, a map entry
// and a set element. The addresses are local to the load balancer (a
// local route), so every mode can serve them.
//
//	go test ./internal/driver/tproxy -run '^$' -bench NewPort -benchtime 20x
func BenchmarkNewPort(b *testing.B) {
	for _, m := range []struct {
		name, mode string
		pool       bool
	}{{render.ListenersPorts, render.ListenersPorts, false}, {render.ListenersTProxy, render.ListenersTProxy, false},
		{"tproxy+pool", render.ListenersTProxy, true}} {
		b.Run(m.name, func(b *testing.B) {
			var policy spares.Policy
			if m.pool {
				// Enough free spares that no growth reload falls inside
				// the timed part (growth is a reload ahead of need), of
				// both classes: every other new Service is restricted
				// and takes a spare that checks sources.
				policy = spares.Policy{Spares: b.N + 2, Other: b.N + 2, LowWater: 1}
			}
			l := startDPWith(b, m.mode, policy)
			var drv driver.Driver = l.hd
			if m.mode == render.ListenersTProxy {
				drv = l.drv
			}
			ipn(b, l.lab.LB, "route", "add", "local", "203.0.113.0/24", "dev", "lo")
			fe, be := l.svc("a", bind(vipA, 80))
			cfg := model.Config{Frontends: []model.Frontend{fe}, Backends: []*model.Backend{be}}
			ctx := context.Background()
			if _, err := drv.Apply(ctx, cfg); err != nil {
				b.Fatal(err)
			}
			before := l.reloads(b)
			b.ResetTimer()
			var worst time.Duration
			for i := range b.N {
				port := uint16(20000 + i)
				next := cfg
				next.Frontends = append([]model.Frontend{}, cfg.Frontends...)
				f := model.Frontend{Name: fmt.Sprintf("fe_a_%d", port), Service: "default/a",
					Backend: "be_a", Binds: []model.Bind{bind(vipA, port)}}
				if m.pool {
					name := fmt.Sprintf("s%d", port)
					f.Name, f.Service, f.Backend = "fe_"+name, "default/"+name, "be_"+name
					if i%2 == 1 {
						f.SourceRanges = pfx("192.0.2.0/24")
					}
					next.Backends = append(append([]*model.Backend{}, cfg.Backends...), &model.Backend{Name: f.Backend,
						Service: f.Service, Balance: "roundrobin", Servers: be.Servers})
				}
				next.Frontends = append(next.Frontends, f)
				start := time.Now()
				if _, err := drv.Apply(ctx, next); err != nil {
					b.Fatal(err)
				}
				dst := netip.AddrPortFrom(vipA, port)
				if err := netlab.Eventually(ctx, 30*time.Second, func() error {
					got, err := ask(l.lab.Client, netip.Addr{}, dst)
					if got != "a" {
						return fmt.Errorf("%s: %q %v", dst, got, err)
					}
					return nil
				}); err != nil {
					b.Fatal(err)
				}
				worst = max(worst, time.Since(start))
				cfg = next
			}
			b.StopTimer()
			b.ReportMetric(float64(l.reloads(b)-before)/float64(b.N), "reloads/op")
			b.ReportMetric(float64(worst.Milliseconds()), "worst-ms")
		})
	}
}

// BenchmarkNewPortAmongMany is BenchmarkNewPort's tproxy case with n
// ports already served (n keys in the listener map), the map changed
// whole as before (whole) and by difference (diff) side by side.
//
//	go test ./internal/driver/tproxy -run '^$' -bench NewPortAmongMany -benchtime 20x
func BenchmarkNewPortAmongMany(b *testing.B) {
	const n = 2000 // 5,000 and 10,000 failed in the kernel driver's first batch before batch.go; BenchmarkNewServiceAmongMany runs at 10,000
	for _, way := range []string{"whole", "diff"} {
		b.Run(fmt.Sprintf("%d/%s", n, way), func(b *testing.B) {
			l := startDPWith(b, render.ListenersTProxy, spares.Policy{})
			opts := l.hopts
			opts.WholeMaps = way == "whole"
			hd := runtimeapi.NewHAProxy(opts)
			b.Cleanup(func() { _ = hd.Close() })
			drv := l.drv
			drv.HAProxy = hd
			ipn(b, l.lab.LB, "route", "add", "local", "203.0.113.0/24", "dev", "lo")
			fe, be := l.svc("a", bind(vipA, 80))
			cfg := model.Config{Frontends: []model.Frontend{fe}, Backends: []*model.Backend{be}}
			for i := range n {
				port := uint16(30000 + i)
				cfg.Frontends = append(cfg.Frontends, model.Frontend{Name: fmt.Sprintf("fe_a_%d", port), Service: "default/a",
					Backend: "be_a", Binds: []model.Bind{bind(vipA, port)}})
			}
			ctx := context.Background()
			if _, err := drv.Apply(ctx, cfg); err != nil {
				b.Fatal(err)
			}
			before := l.reloads(b)
			var took []time.Duration
			for i := 0; b.Loop(); i++ {
				port := uint16(20000 + i)
				next := cfg
				next.Frontends = append(append([]model.Frontend{}, cfg.Frontends...), model.Frontend{Name: fmt.Sprintf("fe_a_%d", port),
					Service: "default/a", Backend: "be_a", Binds: []model.Bind{bind(vipA, port)}})
				start := time.Now()
				if _, err := drv.Apply(ctx, next); err != nil {
					b.Fatal(err)
				}
				dst := netip.AddrPortFrom(vipA, port)
				if err := netlab.Eventually(ctx, 30*time.Second, func() error {
					if got, err := ask(l.lab.Client, netip.Addr{}, dst); got != "a" {
						return fmt.Errorf("%s: %q %v", dst, got, err)
					}
					return nil
				}); err != nil {
					b.Fatal(err)
				}
				took = append(took, time.Since(start))
				cfg = next
			}
			q := quantilesMs(took)
			b.ReportMetric(q(0.5), "p50-ms")
			b.ReportMetric(q(0.99), "p99-ms")
			b.ReportMetric(float64(l.reloads(b)-before)/float64(len(took)), "reloads/op")
		})
	}
}
