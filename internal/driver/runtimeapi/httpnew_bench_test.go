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

// withNewRoute is h with a new route's host (new.example.com) put at
// place at (the compiler's table keeps its hosts in order, so a new
// route's host lands among them and moves every host after it) and its
// action appended (the compiler writes a new route's actions past the
// last table's), every other host's rules and action's slices shared
// with h, as the compiler's memo hands them from pass to pass.
func withNewRoute(h *model.HTTP, at int) *model.HTTP { return withRoute(h, at, "new.example.com") }

// withRoute is withNewRoute with the host's name.
func withRoute(h *model.HTTP, at int, name string) *model.HTTP {
	nh := &model.HTTP{Port: h.Port, Listeners: h.Listeners, Actions: slices.Clone(h.Actions)}
	nh.Actions = append(nh.Actions, model.HTTPAction{Backends: []model.WeightedBackend{{Name: "gwh_b", Weight: 1}}})
	nh.Hosts = append(slices.Clone(h.Hosts[:at]), model.HTTPHost{Name: name, Rules: []model.HTTPRule{
		{PathType: model.PathPrefix, Path: "/", Action: len(nh.Actions) - 1},
	}})
	nh.Hosts = append(nh.Hosts, h.Hosts[at:]...)
	return model.Shaped(nh)
}

// BenchmarkHTTPRouteNew: the driver's stage of a new HTTPRoute's pass at
// n routes on a real HAProxy (issue 30): the table with a new route in
// its middle, then without it again, in turn (withNewRoute: the other
// routes' slices shared, as gateway.Compute hands them), each through
// Apply (each table with its Shape, as every producer sets it), with the p50 and p99 of a pass, of the pass less the files'
// write (served), and of the CPU the process spent (cpu-p50: the
// machine's load aside); -benchmem's bytes and allocations are the
// driver's own (the tables are built once, before the loop).
// go test ./internal/driver/runtimeapi -run '^$' -bench BenchmarkHTTPRouteNew -benchtime 40x -benchmem
func BenchmarkHTTPRouteNew(b *testing.B) {
	for _, n := range []int{1000, 5000} {
		b.Run(strconv.Itoa(n), func(b *testing.B) {
			l := startMapLab(b)
			d := l.d
			port := uint16(haproxytest.FreePort(b))
			none := netip.MustParseAddrPort("127.0.0.1:1")
			t0 := routeTable(n, "/app", 90)
			t1 := withNewRoute(t0, n/2)
			cfgs := [2]model.Config{httpConfig(port, t0, none, none), httpConfig(port, t1, none, none)}
			ctx := context.Background()
			for _, c := range cfgs { // both tables' backends and header names in the structure once
				if _, err := d.Apply(ctx, c); err != nil {
					b.Fatal(err)
				}
			}
			reloads := l.reloads(ctx, b)
			i := 0
			benchApplies(b, d, func() model.Config { i++; return cfgs[i%2] })
			if rl := l.reloads(ctx, b) - reloads; rl != 0 {
				b.Fatalf("%d reloads", rl)
			}
		})
	}
}

// benchApplies applies next's configurations through d in b's loop,
// none may reload, and reports the commands a pass sent and the p50 and
// p99 of a pass, of the pass less the files' write (served), and the
// CPU the process spent (cpu-p50: the machine's load aside); where the
// HTTP maps' edits went before their files were built, the p50 of the
// time and CPU from the pass's start until then (sent-p50,
// cpu-sent-p50).
func benchApplies(b *testing.B, d *HAProxy, next func() model.Config) {
	ctx := context.Background()
	ops := 0
	var took, served, cpu, sent, sentCPU []time.Duration
	var t time.Time
	var c time.Duration
	testHookMapsSent = func() { // mapsync.go: a batch sent before its files were built
		sent, sentCPU = append(sent, time.Since(t)), append(sentCPU, cputime.Used()-c)
	}
	defer func() { testHookMapsSent = nil }()
	for b.Loop() {
		cfg := next()
		t, c = time.Now(), cputime.Used()
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
	for _, s := range [][]time.Duration{took, served, cpu, sent, sentCPU} {
		slices.Sort(s)
	}
	ms := func(d []time.Duration, q float64) float64 {
		return float64(d[min(len(d)-1, int(q*float64(len(d))))].Microseconds()) / 1000
	}
	b.ReportMetric(float64(ops)/float64(len(took)), "commands/op")
	b.ReportMetric(ms(took, 0.5), "p50-ms")
	b.ReportMetric(ms(took, 0.99), "p99-ms")
	b.ReportMetric(ms(served, 0.5), "served-p50-ms")
	b.ReportMetric(ms(served, 0.99), "served-p99-ms")
	b.ReportMetric(ms(cpu, 0.5), "cpu-p50-ms")
	if len(sent) > 0 {
		b.ReportMetric(ms(sent, 0.5), "sent-p50-ms")
		b.ReportMetric(ms(sentCPU, 0.5), "cpu-sent-p50-ms")
	}
}
