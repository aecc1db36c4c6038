package runtimeapi

import (
	"context"
	"net/netip"
	"strconv"
	"testing"

	"github.com/haproxy-k8s-sync/haproxy-k8s-sync/internal/haproxy/haproxytest"
	"github.com/haproxy-k8s-sync/haproxy-k8s-sync/internal/model"
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
				gen := 0
				benchApplies(b, d, func() model.Config {
					gen++
					// Route 0's Exact path, every other change its split too.
					return cfgOf(routeTable(n, "/app"+strconv.Itoa(gen), int32(90-gen%2*80)))
				})
				if rl := l.reloads(ctx, b) - reloads; rl != 0 {
					b.Fatalf("%d reloads", rl)
				}
			})
		}
	}
}
