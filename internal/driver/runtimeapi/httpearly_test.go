package runtimeapi

import (
	"context"
	"maps"
	"net/netip"
	"os"
	"strings"
	"testing"

	"github.com/haproxy-k8s-sync/haproxy-k8s-sync/internal/haproxy/haproxytest"
	"github.com/haproxy-k8s-sync/haproxy-k8s-sync/internal/model"
	"github.com/haproxy-k8s-sync/haproxy-k8s-sync/internal/render"
)

// The HTTP maps' edits sent before the whole maps are built (issue 30,
// httpMapUpdate, pushMaps).

// httpKinds are the HTTP map files of frontend gw_apps_gw_80 that the
// worker of d reads, by kind.
func httpKinds(ctx context.Context, t *testing.T, d *HAProxy) map[string]string {
	t.Helper()
	if err := d.listMaps(ctx); err != nil {
		t.Fatal(err)
	}
	out := map[string]string{}
	for _, kind := range render.HTTPMapKinds {
		p := render.HTTPMapFile(d.opts.Render.ACLDir, "gw_apps_gw_80", kind)
		if read, _ := d.held.reads(d.pid, p); read {
			out[kind] = p
		}
	}
	return out
}

// checkMapsAre fails t unless every HTTP map the worker of d reads holds
// the entries of HTTPMaps(h), and its file on disk too (what a reload
// reads).
func checkMapsAre(ctx context.Context, t *testing.T, d *HAProxy, step string, h *model.HTTP) {
	t.Helper()
	want := render.HTTPMaps(h)
	for kind, p := range httpKinds(ctx, t, d) {
		w, _ := mapEntries(newHTTPFile(p, want[kind]).pf.allLines())
		if got := showMap(ctx, t, d, p); !maps.Equal(got, w) {
			t.Errorf("%s: HAProxy's %s map holds %d entries, not the table's %d", step, kind, len(got), len(w))
		}
		if got := fileMap(t, p); !maps.Equal(got, w) {
			t.Errorf("%s: the %s map's file holds %d entries, not the table's %d", step, kind, len(got), len(w))
		}
	}
}

// httpLab is startMapLab with one HTTP frontend on a free port: cfgOf
// makes its configuration of table h, backend gwh_a's server a dead
// port, gwh_b's b (none: a dead port too).
func httpLab(t *testing.T, b netip.AddrPort) (l *testLab, port uint16, cfgOf func(h *model.HTTP) model.Config) {
	l = startMapLab(t)
	port = uint16(haproxytest.FreePort(t))
	none := netip.MustParseAddrPort("127.0.0.1:1")
	if !b.IsValid() {
		b = none
	}
	return l, port, func(h *model.HTTP) model.Config { return httpConfig(port, h, none, b) }
}

// TestHTTPMapEditsSentBeforeBuilt: a new route's pass at 1,000 routes
// sends its entries to the worker before the whole maps are built and
// their files written: when the batch has gone, the worker holds the
// new host and serves it, the memo has built nothing of the new table
// and the file on disk is still the last one; when the pass returns,
// every map's file is what the worker holds. A pass whose worker does
// not hold what the edit starts from (its entries forgotten) builds
// first and replaces the maps whole, as before. No reload.
func TestHTTPMapEditsSentBeforeBuilt(t *testing.T) {
	const n = 1000
	l, port, cfgOf := httpLab(t, httpBackend(t, "B"))
	d := l.d
	ctx := context.Background()
	addr := netip.AddrPortFrom(netip.MustParseAddr("127.0.0.1"), port).String()
	t0 := routeTable(n, "/app", 90)
	t1 := withNewRoute(t0, n/2) // httpnew_bench_test.go: new.example.com to gwh_b
	if _, err := d.Apply(ctx, cfgOf(t0)); err != nil {
		t.Fatal(err)
	}
	reloads := l.reloads(ctx, t)
	hosts := render.HTTPMapFile(d.opts.Render.ACLDir, "gw_apps_gw_80", render.HTTPHosts)
	sent := 0
	// sentBefore is the hook of a pass whose batch makes the new host
	// served (in) or not.
	sentBefore := func(in bool) func() {
		return func() {
			sent++
			if _, ok := showMap(ctx, t, d, hosts)["new.example.com"]; ok != in {
				t.Errorf("batch sent: the new route's host in HAProxy's hosts map: %v, want %v", ok, in)
			}
			if status, body := httpGet(t, addr, "new.example.com", "/"); (status == 200 && strings.HasPrefix(body, "B")) != in {
				t.Errorf("batch sent: GET new.example.com/: %d %q, want it served from B: %v", status, body, in)
			}
			if _, ok := fileMap(t, hosts)["new.example.com"]; ok == in {
				t.Errorf("batch sent: the hosts file already written (the new host in it: %v)", ok)
			}
			if m := d.httpMemos["gw_apps_gw_80"]; m == nil || m.built {
				t.Errorf("batch sent: the memo's files already built for the new table")
			}
		}
	}
	testHookMapsSent = sentBefore(true)
	t.Cleanup(func() { testHookMapsSent = nil })
	res, err := d.Apply(ctx, cfgOf(t1))
	if err != nil {
		t.Fatal(err)
	}
	if sent != 1 {
		t.Fatalf("the new route's pass sent its batch before building %d times, want 1", sent)
	}
	if res.Ops == 0 || res.Ops > 8 {
		t.Errorf("a new route: %d commands, want 1..8", res.Ops)
	}
	checkMapsAre(ctx, t, d, "new route", t1)

	// The route gone again: edits first too.
	testHookMapsSent = sentBefore(false)
	if _, err := d.Apply(ctx, cfgOf(t0)); err != nil || sent != 2 {
		t.Fatalf("the route gone: %v, batches sent before building %d, want 2", err, sent)
	}
	checkMapsAre(ctx, t, d, "route gone", t0)

	// Entries unknown (a failed push): nothing goes before the build;
	// the worker's maps are read back and the difference sent
	// (mapread.go), not every map whole (more than n).
	testHookMapsSent = func() { t.Errorf("unknown entries: a batch sent before the files were built") }
	d.held.forget()
	if res, err = d.Apply(ctx, cfgOf(t1)); err != nil || res.Ops == 0 || res.Ops > 8 {
		t.Fatalf("unknown entries: %d commands, %v; want the difference read back, 1..8 (a whole replace is more than %d)", res.Ops, err, n)
	}
	checkMapsAre(ctx, t, d, "whole", t1)
	if got := l.reloads(ctx, t); got != reloads {
		t.Errorf("%d reloads, want 0", got-reloads)
	}
}

// TestHTTPMapsStoppedBeforeWritten: a controller stopped after its
// batch went to the worker and before the files were written (the
// worker ahead of the files on disk) converges at its restart: the new
// process knows nothing the worker holds, reads its maps back and sends
// the difference from the table it wants (mapread.go) and writes the files, whether the world kept the
// change or went back meanwhile; then a route is a few commands again.
// No reload. "left": the pass left its files to Run (duefiles.go), and
// the controller was killed before Run wrote them.
func TestHTTPMapsStoppedBeforeWritten(t *testing.T) {
	const n = 300
	for _, tc := range []struct {
		name  string
		after func(t0, t1 *model.HTTP) *model.HTTP // the table the restarted controller wants
	}{
		{"kept", func(_, t1 *model.HTTP) *model.HTTP { return t1 }},
		{"back", func(t0, _ *model.HTTP) *model.HTTP { return t0 }},
		{"moved on", func(_, t1 *model.HTTP) *model.HTTP { return withRoute(t1, 10, "other.example.com") }},
		{"left kept", func(_, t1 *model.HTTP) *model.HTTP { return t1 }},
		{"left moved on", func(_, t1 *model.HTTP) *model.HTTP { return withRoute(t1, 10, "other.example.com") }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			l, _, cfgOf := httpLab(t, netip.AddrPort{})
			d := l.d
			// As while Run runs, killed before it writes anything.
			d.due.on = strings.HasPrefix(tc.name, "left")
			ctx := context.Background()
			t0 := routeTable(n, "/app", 90)
			t1 := withNewRoute(t0, n/2)
			if _, err := d.Apply(ctx, cfgOf(t0)); err != nil {
				t.Fatal(err)
			}
			reloads := l.reloads(ctx, t)
			// The stop: the files as they were when the batch went out,
			// put back once the pass returns.
			onDisk := map[string][]byte{}
			testHookMapsSent = func() {
				for _, p := range httpKinds(ctx, t, d) {
					b, err := os.ReadFile(p)
					if err != nil {
						t.Fatal(err)
					}
					onDisk[p] = b
				}
			}
			t.Cleanup(func() { testHookMapsSent = nil })
			if _, err := d.Apply(ctx, cfgOf(t1)); err != nil {
				t.Fatal(err)
			}
			testHookMapsSent = nil
			if len(onDisk) == 0 {
				t.Fatal("the new route's batch was not sent before its files were built")
			}
			for p, b := range onDisk {
				if err := os.WriteFile(p, b, 0o644); err != nil {
					t.Fatal(err)
				}
			}
			if _, ok := fileMap(t, render.HTTPMapFile(d.opts.Render.ACLDir, "gw_apps_gw_80", render.HTTPHosts))["new.example.com"]; ok {
				t.Fatal("the files put back hold the new route")
			}
			_ = d.Close()

			d2 := NewHAProxy(d.opts) // the restarted controller
			l.d = d2
			t.Cleanup(func() { _ = d2.Close() })
			want := tc.after(t0, t1)
			if _, err := d2.Apply(ctx, cfgOf(want)); err != nil {
				t.Fatal(err)
			}
			checkMapsAre(ctx, t, d2, "restarted", want)
			then := withRoute(want, 3, "then.example.com")
			res, err := d2.Apply(ctx, cfgOf(then))
			if err != nil {
				t.Fatal(err)
			}
			if res.Ops == 0 || res.Ops > 8 {
				t.Errorf("then a new route: %d commands, want 1..8", res.Ops)
			}
			checkMapsAre(ctx, t, d2, "then a new route", then)
			if got := l.reloads(ctx, t); got != reloads {
				t.Errorf("%d reloads, want 0", got-reloads)
			}
		})
	}
}
