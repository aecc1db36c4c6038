package runtimeapi

import (
	"context"
	"fmt"
	"maps"
	"net/netip"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/haproxy-k8s-sync/haproxy-k8s-sync/internal/haproxy/haproxytest"
	"github.com/haproxy-k8s-sync/haproxy-k8s-sync/internal/model"
	"github.com/haproxy-k8s-sync/haproxy-k8s-sync/internal/render"
)

// runMapFilesFor runs d.Run (its map files written after quiet, at the
// latest maxDelay) until the function it returns is called, which waits
// for Run's end; Run's loop of the map files is on when it returns.
func runMapFilesFor(t *testing.T, d *HAProxy, quiet, maxDelay time.Duration) (stop func()) {
	t.Helper()
	d.due.quiet, d.due.maxDelay = quiet, maxDelay
	ctx, cancel := context.WithCancel(context.Background())
	ran := make(chan struct{})
	go func() {
		defer close(ran)
		d.Run(ctx, time.Hour, time.Hour)
	}()
	stop = func() {
		cancel()
		select {
		case <-ran:
		case <-time.After(time.Minute):
			t.Fatal("Run did not return within a minute of its end")
		}
	}
	t.Cleanup(stop)
	until(t, 10*time.Second, func() bool { // Run's loop of the map files on
		d.mu.Lock()
		defer d.mu.Unlock()
		return d.due.on
	})
	return stop
}

// TestHTTPMapFilesAfterPasses: while Run runs, passes that send the
// memo's edit leave the HTTP maps' files to it (issue 30, mapfiles.go):
// each new table is served when its pass returns, by a few commands
// chained from what the worker holds with no file built, and the files
// on disk stay the last ones written; a reload right after (a new
// frontend) writes every map file before the master reads them: the new
// worker serves the routes of the last pass. Files left again are
// written when Run ends. No reload but the one asked for.
func TestHTTPMapFilesAfterPasses(t *testing.T) {
	const n = 1000
	l, port, cfgOf := httpLab(t, httpBackend(t, "B"))
	d := l.d
	ctx := context.Background()
	addr := netip.AddrPortFrom(netip.MustParseAddr("127.0.0.1"), port).String()
	stop := runMapFilesFor(t, d, time.Hour, time.Hour) // written only by a reload, or when Run ends
	t0 := routeTable(n, "/app", 90)
	if _, err := d.Apply(ctx, cfgOf(t0)); err != nil {
		t.Fatal(err)
	}
	checkMapsAre(ctx, t, d, "first", t0) // a first table is built before it is sent
	reloads := l.reloads(ctx, t)
	hosts := render.HTTPMapFile(d.opts.Render.ACLDir, "gw_apps_gw_80", render.HTTPHosts)
	onDisk := fileMap(t, hosts)
	t1 := withNewRoute(t0, n/2)
	t2 := withRoute(t1, 10, "other.example.com")
	t3 := withRoute(t0, 10, "other.example.com")
	for i, h := range []*model.HTTP{t1, t2, t3} {
		res, err := d.Apply(ctx, cfgOf(h))
		if err != nil {
			t.Fatal(err)
		}
		if res.Ops == 0 || res.Ops > 8 {
			t.Errorf("pass %d: %d commands, want 1..8 (the memo's edit)", i+1, res.Ops)
		}
		for kind, p := range httpKinds(ctx, t, d) {
			if got, want := showMap(ctx, t, d, p), mustEntries(t, render.HTTPMaps(h)[kind]); !maps.Equal(got, want) {
				t.Errorf("pass %d: HAProxy's %s map holds %d entries, not the table's %d", i+1, kind, len(got), len(want))
			}
		}
		if got := fileMap(t, hosts); !maps.Equal(got, onDisk) {
			t.Errorf("pass %d: the hosts file written in the pass (%d entries, the last written %d)", i+1, len(got), len(onDisk))
		}
		if m := d.httpMemos["gw_apps_gw_80"]; m == nil || m.built {
			t.Errorf("pass %d: the memo's files built in the pass", i+1)
		}
	}
	if status, body := httpGet(t, addr, "other.example.com", "/"); status != 200 || !strings.HasPrefix(body, "B") {
		t.Errorf("after the passes: GET other.example.com/: %d %q, want 200 from B", status, body)
	}
	if got := l.reloads(ctx, t); got != reloads {
		t.Fatalf("%d reloads, want 0", got-reloads)
	}

	// A reload right after: the new worker reads the map files.
	extra := model.Frontend{Name: "fe_extra", Backend: "gwh_b",
		Binds: []model.Bind{{Addr: netip.MustParseAddr("127.0.0.1"), Port: uint16(haproxytest.FreePort(t))}}}
	withFrontend := func(h *model.HTTP) model.Config {
		c := cfgOf(h)
		c.Frontends = append(c.Frontends, extra)
		return c
	}
	res, err := d.Apply(ctx, withFrontend(t3))
	if err != nil || !res.Reloaded {
		t.Fatalf("a new frontend: reloaded %v, %v; want a reload", res.Reloaded, err)
	}
	if status, body := httpGet(t, addr, "other.example.com", "/"); status != 200 || !strings.HasPrefix(body, "B") {
		t.Errorf("reloaded: GET other.example.com/: %d %q, want 200 from B (the files the new worker read are older than the pass)", status, body)
	}
	checkMapsAre(ctx, t, d, "reloaded", t3)

	// Left again: written when Run ends.
	t4 := withRoute(t3, 20, "late.example.com")
	if _, err := d.Apply(ctx, withFrontend(t4)); err != nil {
		t.Fatal(err)
	}
	if _, ok := fileMap(t, hosts)["late.example.com"]; ok {
		t.Errorf("late.example.com in the hosts file when its pass returned, want it left to Run")
	}
	stop()
	checkMapsAre(ctx, t, d, "Run ended", t4)
}

// mustEntries are entries by key.
func mustEntries(t *testing.T, entries []render.HTTPMapEntry) map[string]string {
	t.Helper()
	out := make(map[string]string, len(entries))
	for _, e := range entries {
		out[e.Key] = e.Value
	}
	return out
}

// TestHTTPMapFilesConcurrentPasses: passes and Run's writes of the files
// they leave interleave (a write due 1 ms after a pass, at the latest
// 3 ms): no update is lost, the files on disk once Run ends and the
// worker's maps are the last pass's table, and every pass sent the
// memo's edit, no reload. Run it with -race.
func TestHTTPMapFilesConcurrentPasses(t *testing.T) {
	const n, passes = 300, 40
	l, _, cfgOf := httpLab(t, netip.AddrPort{})
	d := l.d
	ctx := context.Background()
	stop := runMapFilesFor(t, d, time.Millisecond, 3*time.Millisecond)
	h := routeTable(n, "/app", 90)
	if _, err := d.Apply(ctx, cfgOf(h)); err != nil {
		t.Fatal(err)
	}
	reloads := l.reloads(ctx, t)
	for i := range passes {
		h = withRoute(h, (i*37)%n, fmt.Sprintf("c%d.example.com", i))
		res, err := d.Apply(ctx, cfgOf(h))
		if err != nil {
			t.Fatal(err)
		}
		if res.Ops == 0 || res.Ops > 8 {
			t.Errorf("pass %d: %d commands, want 1..8 (the memo's edit)", i, res.Ops)
		}
	}
	stop()
	checkMapsAre(ctx, t, d, "after the passes", h)
	if got := l.reloads(ctx, t); got != reloads {
		t.Errorf("%d reloads, want 0", got-reloads)
	}
}

// TestHTTPMapFilesAfterFailedWrite: once a write after the passes
// failed, the next pass builds and writes its files itself (an error of
// its own would go to the workqueue); when it has, passes leave their
// files to Run again.
func TestHTTPMapFilesAfterFailedWrite(t *testing.T) {
	const n = 300
	l, _, cfgOf := httpLab(t, netip.AddrPort{})
	d := l.d
	ctx := context.Background()
	d.due.on = true // as while Run runs, its writes not made here
	t0 := routeTable(n, "/app", 90)
	if _, err := d.Apply(ctx, cfgOf(t0)); err != nil {
		t.Fatal(err)
	}
	hosts := render.HTTPMapFile(d.opts.Render.ACLDir, "gw_apps_gw_80", render.HTTPHosts)
	d.due.http, d.due.failed = true, true // Run's write failed
	t1 := withRoute(t0, 5, "first.example.com")
	if _, err := d.Apply(ctx, cfgOf(t1)); err != nil {
		t.Fatal(err)
	}
	if _, ok := fileMap(t, hosts)["first.example.com"]; !ok || d.due.failed || d.due.http {
		t.Errorf("after a failed write: the pass wrote its hosts file %v (failed %v, due %v), want it written, nothing due", ok, d.due.failed, d.due.http)
	}
	t2 := withRoute(t1, 9, "then.example.com")
	if _, err := d.Apply(ctx, cfgOf(t2)); err != nil {
		t.Fatal(err)
	}
	if _, ok := fileMap(t, hosts)["then.example.com"]; ok || !d.due.http {
		t.Errorf("then: the pass wrote its hosts file %v (due %v), want it left to Run", ok, d.due.http)
	}
}

// TestPoolFileAfterThePass (issue 29): while Run runs, a pass returns
// without waiting for pool.json's write (a new Service's EndpointSlice
// waited for its object's pass to write it: every other new Service a
// pass's tail later); the one writer (duefiles.go) writes the latest
// bytes right after, and what is due when Run ends is on disk before Run
// returns. A pass after a failed write writes the file itself.
func TestPoolFileAfterThePass(t *testing.T) {
	lb := startPoolLab(t, 0)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	w := newPoolWorld(t)
	nodeOf := map[string]int{"be_a": 0, "be_b": 1, "be_c": 0, "be_d": 1}
	if _, err := lb.d.Apply(ctx, w.config([]string{"be_a"}, nodeOf)); err != nil {
		t.Fatal(err)
	}
	pool := PoolFile(lb.cfgPath)
	names := func(be string) bool {
		b, err := os.ReadFile(pool)
		return err == nil && strings.Contains(string(b), `"`+be+`"`)
	}
	if !names("be_a") {
		t.Fatal("pool.json does not name be_a after the first pass (no Run: the pass writes it)")
	}

	rctx, stop := context.WithCancel(ctx)
	ran := make(chan struct{})
	go func() { lb.d.Run(rctx, time.Hour, time.Hour); close(ran) }()
	defer func() { stop(); <-ran }()
	until(t, 10*time.Second, func() bool { lb.d.mu.Lock(); defer lb.d.mu.Unlock(); return lb.d.due.on })

	held, release := make(chan struct{}, 4), make(chan struct{})
	hook := func() { held <- struct{}{}; <-release }
	testHookDueWrite.Store(&hook)
	defer testHookDueWrite.Store(nil)
	applied := make(chan error, 1)
	go func() {
		_, err := lb.d.Apply(ctx, w.config([]string{"be_a", "be_b"}, nodeOf))
		applied <- err
	}()
	select {
	case err := <-applied:
		if err != nil {
			t.Fatal(err)
		}
	case <-time.After(10 * time.Second):
		close(release)
		t.Fatal("the pass did not return while the files' write was held: it waits for the files")
	}
	if names("be_b") {
		t.Error("pool.json names be_b while its write is held")
	}
	select {
	case <-held:
	case <-time.After(10 * time.Second):
		t.Fatal("the writer did not start the files' write after the pass")
	}
	testHookDueWrite.Store(nil)
	close(release)
	until(t, 10*time.Second, func() bool { return names("be_b") })

	// A failed write: the next pass writes what is due itself (its error
	// would go to the workqueue); once nothing is due, passes leave their
	// files to the writer again.
	last, err := os.ReadFile(pool)
	if err != nil {
		t.Fatal(err)
	}
	lb.d.mu.Lock()
	lb.d.dueFailed(map[string]dueFile{pool: {body: last, what: "backend pool"}})
	later := lb.d.due.later()
	lb.d.mu.Unlock()
	if later {
		t.Fatal("after a failed write, passes still leave their files to the writer")
	}
	if _, err := lb.d.Apply(ctx, w.config([]string{"be_a", "be_b", "be_d"}, nodeOf)); err != nil {
		t.Fatal(err)
	}
	lb.d.mu.Lock()
	later = lb.d.due.later()
	lb.d.mu.Unlock()
	if !later {
		t.Error("after the pass that wrote what was due, passes do not leave their files to the writer")
	}
	until(t, 10*time.Second, func() bool { return names("be_d") })

	// What is due when Run ends is written before it returns.
	if _, err := lb.d.Apply(ctx, w.config([]string{"be_a", "be_b", "be_c", "be_d"}, nodeOf)); err != nil {
		t.Fatal(err)
	}
	stop()
	<-ran
	if !names("be_c") {
		t.Error("pool.json does not name be_c once Run returned")
	}
}

// until polls cond every millisecond until it holds or d passed.
func until(t *testing.T, d time.Duration, cond func() bool) {
	t.Helper()
	for deadline := time.Now().Add(d); !cond(); time.Sleep(time.Millisecond) { // poll interval
		if time.Now().After(deadline) {
			t.Fatal("condition not met within", d)
		}
	}
}
