package runtimeapi

import (
	"context"
	"net/netip"
	"slices"
	"strconv"
	"testing"
	"time"

	"github.com/haproxy-k8s-sync/haproxy-k8s-sync/internal/haproxy/haproxytest"
	"github.com/haproxy-k8s-sync/haproxy-k8s-sync/internal/model"
	"github.com/haproxy-k8s-sync/haproxy-k8s-sync/internal/testing/cputime"
)

// One HTTPRoute changed among n on a real HAProxy: the driver's pass (the
// HTTP maps computed, the changed file written, HAProxy told), no reload,
// the old ways (every changed map replaced whole: prepare/add/commit map;
// the entries that differ, add/set/del map, mapsync.go, from tables
// lowered whole each pass; the same, lowering only the actions and
// hosts that changed: render.HTTPMapsMemo) and the new one (the memo's
// edits sent as they are, no file diffed: render/httpedits.go) side by
// side in one run, with the p50 and p99 of a change: the whole
// pass, and until HAProxy answered (served: the pass less the files'
// write, which follows; the whole way's maps are written first, but
// read by no one until a reload), and the CPU the process spent in a
// pass (p50: the machine's load aside).
// go test ./internal/driver/runtimeapi -run '^$' -bench BenchmarkHTTPRouteChange -benchtime 20x
func BenchmarkHTTPRouteChange(b *testing.B) {
	for _, n := range []int{100, 1000, 5000} {
		for _, way := range []string{"whole", "diff", "memo", "edits"} {
			b.Run(strconv.Itoa(n)+"/"+way, func(b *testing.B) {
				l := startMapLab(b)
				d := l.d
				d.opts.WholeMaps = way == "whole"
				d.noHTTPMemo = way != "memo" && way != "edits"
				d.noMapEdits = way != "edits"
				port := uint16(haproxytest.FreePort(b))
				none := netip.MustParseAddrPort("127.0.0.1:1")
				cfgOf := func(h *model.HTTP) model.Config { return httpConfig(port, h, none, none) }
				ctx := context.Background()
				if _, err := d.Apply(ctx, cfgOf(routeTable(n, "/app", 90))); err != nil {
					b.Fatal(err)
				}
				reloads := l.reloads(ctx, b)
				gen, ops := 0, 0
				var took, served, cpu []time.Duration
				for b.Loop() {
					gen++
					// Route 0's Exact path, every other change its split too.
					cfg := cfgOf(routeTable(n, "/app"+strconv.Itoa(gen), int32(90-gen%2*80)))
					t, c := time.Now(), cputime.Used()
					res, err := d.Apply(ctx, cfg)
					took = append(took, time.Since(t))
					cpu = append(cpu, cputime.Used()-c)
					served = append(served, took[len(took)-1]-res.Write)
					if err != nil {
						b.Fatal(err)
					}
					if len(res.Reasons) > 0 {
						b.Fatalf("reloaded: %v", res.Reasons)
					}
					ops += res.Ops
				}
				slices.Sort(took)
				slices.Sort(served)
				slices.Sort(cpu)
				ms := func(d []time.Duration, q float64) float64 {
					return float64(d[min(len(d)-1, int(q*float64(len(d))))].Microseconds()) / 1000
				}
				b.ReportMetric(float64(ops)/float64(len(took)), "commands/op")
				b.ReportMetric(ms(took, 0.5), "p50-ms")
				b.ReportMetric(ms(took, 0.99), "p99-ms")
				b.ReportMetric(ms(served, 0.5), "served-p50-ms")
				b.ReportMetric(ms(served, 0.99), "served-p99-ms")
				b.ReportMetric(ms(cpu, 0.5), "cpu-p50-ms")
				if rl := l.reloads(ctx, b) - reloads; rl != 0 {
					b.Fatalf("%d reloads", rl)
				}
			})
		}
	}
}
