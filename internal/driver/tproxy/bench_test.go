package tproxy

import (
	"context"
	"fmt"
	"net/netip"
	"testing"
	"time"

	"github.com/haproxy-k8s-sync/haproxy-k8s-sync/internal/driver"
	"github.com/haproxy-k8s-sync/haproxy-k8s-sync/internal/model"
	"github.com/haproxy-k8s-sync/haproxy-k8s-sync/internal/render"
	"github.com/haproxy-k8s-sync/haproxy-k8s-sync/internal/testing/netlab"
)

// BenchmarkNewPort: the time from applying a model with one more port of
// an existing Service (its backend in HAProxy already) to that port's
// first connection answered through HAProxy, from the client namespace,
// in each listener mode side by side: ports (a new frontend: a reload)
// and tproxy (a map entry and a set element). The addresses are local to
// the load balancer (a local route), so both modes can serve them.
//
//	go test ./internal/driver/tproxy -run '^$' -bench NewPort -benchtime 20x
func BenchmarkNewPort(b *testing.B) {
	for _, mode := range []string{render.ListenersPorts, render.ListenersTProxy} {
		b.Run(mode, func(b *testing.B) {
			l := startDPMode(b, mode)
			var drv driver.Driver = l.hd
			if mode == render.ListenersTProxy {
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
				next.Frontends = append(next.Frontends, model.Frontend{Name: fmt.Sprintf("fe_a_%d", port), Service: "default/a",
					Backend: "be_a", Binds: []model.Bind{bind(vipA, port)}})
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
