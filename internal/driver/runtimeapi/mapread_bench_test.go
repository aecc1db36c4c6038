package runtimeapi

import (
	"context"
	"net/netip"
	"strconv"
	"testing"
	"time"

	"github.com/haproxy-k8s-sync/haproxy-k8s-sync/internal/haproxy/haproxytest"
	"github.com/haproxy-k8s-sync/haproxy-k8s-sync/internal/testing/cputime"
)

// BenchmarkRestartMaps: a controller restarted beside a running HAProxy
// in an unchanged world, its first pass on maps of n routes (three HTTP
// maps of n entries and more), on a real HAProxy: main's way (the maps
// it does not know replaced whole: prepare, an add per entry, commit;
// WholeMaps takes that way) and this one (read back with `show map`,
// the difference sent: none), side by side in one run. It reports the
// map commands, the pass's wall time and the CPU this process spent in
// it (HAProxy's own is in the wall time).
//
//	go test ./internal/driver/runtimeapi -run '^$' -bench BenchmarkRestartMaps -benchtime 5x
func BenchmarkRestartMaps(b *testing.B) {
	for _, n := range []int{3400} {
		for _, way := range []string{"whole", "read-back"} {
			b.Run(strconv.Itoa(n)+"/"+way, func(b *testing.B) {
				l := startMapLab(b)
				port := uint16(haproxytest.FreePort(b))
				none := netip.MustParseAddrPort("127.0.0.1:1")
				cfg := httpConfig(port, routeTable(n, "/app", 90), none, none)
				ctx := context.Background()
				if _, err := l.d.Apply(ctx, cfg); err != nil {
					b.Fatal(err)
				}
				reloads := l.reloads(ctx, b)
				var cmds int
				var wall, cpu time.Duration
				b.ResetTimer()
				for range b.N {
					b.StopTimer()
					o := l.d.opts
					o.WholeMaps = way == "whole"
					d := NewHAProxy(o)
					b.StartTimer()
					t, c := time.Now(), cputime.Used()
					if _, err := d.Apply(ctx, cfg); err != nil {
						b.Fatal(err)
					}
					wall, cpu = wall+time.Since(t), cpu+cputime.Used()-c
					cmds += d.mapOps
					b.StopTimer()
					_ = d.Close()
					b.StartTimer()
				}
				b.ReportMetric(float64(cmds)/float64(b.N), "map-cmds/op")
				b.ReportMetric(float64(wall.Microseconds())/1000/float64(b.N), "pass-ms/op")
				b.ReportMetric(float64(cpu.Microseconds())/1000/float64(b.N), "cpu-ms/op")
				if rl := l.reloads(ctx, b) - reloads; rl != 0 {
					b.Fatalf("%d reloads", rl)
				}
			})
		}
	}
}
