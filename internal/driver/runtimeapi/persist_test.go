package runtimeapi

import (
	"context"
	"errors"
	"fmt"
	"net/netip"
	"os"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/haproxy-k8s-sync/haproxy-k8s-sync/internal/atomicfile"
	"github.com/haproxy-k8s-sync/haproxy-k8s-sync/internal/haproxy"
	"github.com/haproxy-k8s-sync/haproxy-k8s-sync/internal/haproxy/haproxytest"
	"github.com/haproxy-k8s-sync/haproxy-k8s-sync/internal/model"
	"github.com/haproxy-k8s-sync/haproxy-k8s-sync/internal/plan"
	"github.com/haproxy-k8s-sync/haproxy-k8s-sync/internal/testing/lab"
)

// persistLab is a real HAProxy, started on a minimal config, and a driver
// for it; the driver's first Apply reloads into a config it rendered.
type persistLab struct {
	*testLab
	statePth string
}

func startPersistLab(t testing.TB) *persistLab {
	t.Helper()
	l := startLab(t)
	return &persistLab{testLab: l, statePth: l.statePath}
}

func persistCtx(t testing.TB) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	t.Cleanup(cancel)
	return ctx
}

// persistConfig has backends be_000.. (sorted names) with the servers 10.<i/250>.<i%250>.j:30000
// for j in 1..servers, minus the first skip of them, without frontends.
func persistConfig(backends, servers, skip int) model.Config {
	var cfg model.Config
	for i := range backends {
		be := model.Backend{Name: fmt.Sprintf("be_%03d", i), Balance: "roundrobin"}
		for j := skip + 1; j <= servers; j++ {
			be.Servers = append(be.Servers, model.Server{Addr: netip.AddrFrom4([4]byte{10, byte(i / 250), byte(i % 250), byte(j)}), Port: 30000})
		}
		cfg.Backends = append(cfg.Backends, &be)
	}
	return cfg
}

// dump returns "show servers state" as a Runtime reads it (trimmed), on a
// new connection: one made before a reload would reach the old worker.
func (l *persistLab) dump(t testing.TB) string {
	t.Helper()
	rt := haproxy.NewRuntime(l.p.StatsSocket)
	defer rt.Close()
	out, err := rt.ExecChecked(persistCtx(t), []string{"show servers state"})
	if err != nil {
		t.Fatal(err)
	}
	return out[0]
}

// saveAgainst runs save between two dumps until both are equal
// (srv_time_since_last_change counts seconds), and returns that dump and
// the state file save wrote.
func (l *persistLab) saveAgainst(t *testing.T, save func() error) (dump, file string) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for {
		before := l.dump(t)
		if err := save(); err != nil {
			t.Fatal(err)
		}
		b, err := os.ReadFile(l.statePth)
		if err != nil {
			t.Fatal(err)
		}
		if after := l.dump(t); after == before {
			return before, string(b)
		}
		if time.Now().After(deadline) {
			t.Fatal("HAProxy's server states never held still over a save")
		}
	}
}

// The state file streamed from HAProxy is its dump, and before a reload it
// holds exactly the lines the former whole-dump filter kept.
func TestSaveStateStreamsTheDump(t *testing.T) {
	l := startPersistLab(t)
	ctx := persistCtx(t)
	// 40 backends of seven servers: twelve slots each, 480 in all.
	if _, err := l.d.Apply(ctx, persistConfig(40, 7, 0)); err != nil {
		t.Fatal(err)
	}
	// Runtime changes: two servers leave every backend, one more arrives.
	cfg := persistConfig(40, 8, 2)
	if res, err := l.d.Apply(ctx, cfg); err != nil || res.Reloaded {
		t.Fatalf("runtime change: reloaded %v, %v", res.Reloaded, err)
	}

	dump, file := l.saveAgainst(t, func() error { return l.d.saveState(ctx) })
	if file != dump+"\n" {
		t.Fatalf("state file differs from the dump:\n%s\nwant\n%s", file, dump)
	}
	if n := strings.Count(file, "\n"); n != 2+40*12 {
		t.Fatalf("state file has %d lines, want %d", n, 2+40*12)
	}

	// The layout of a reload: a third of the backends go, the others lose
	// their first server and gain two, and are resized.
	next, _ := plan.Assign(persistConfig(27, 10, 3), l.d.layout, true)
	dump, file = l.saveAgainst(t, func() error {
		l.d.stateMu.Lock()
		defer l.d.stateMu.Unlock()
		return l.d.saveStateLocked(ctx, next, nil)
	})
	if want := legacyKeepUnchanged(dump, next) + "\n"; file != want {
		t.Fatalf("filtered state file:\n%s\nwant (former filter)\n%s", file, want)
	}
	// Servers 4..8 keep their slots in the 27 backends that stay.
	if kept := len(keptSlots(file)); kept != 27*5 {
		t.Fatalf("kept %d slots, want %d", kept, 27*5)
	}
}

// A slot that gets another server in the reload that loads the state file
// must not start with the state of the server it held: the state file
// carries no line of the former server for it. Since issue 29 it starts
// down as every server a reload brings into a checked backend does (a
// line of its own, with the new server's port: startdown.go), and serves
// once its own check passes.
func TestStateFileBeforeReloadLetsReusedSlotServe(t *testing.T) {
	l := startPersistLab(t)
	ctx := persistCtx(t)
	fePort := haproxytest.FreePort(t)
	dead := haproxytest.FreePort(t) // nothing listens there
	live := haproxytest.FreePort(t)
	node := lab.NewNodeServer("hello", "127.0.0.1")
	if err := node.Listen(live); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(node.Close)
	local := netip.MustParseAddr("127.0.0.1")
	// Rise 20 at 200 ms: starting down, the new server reads UP ~4 s after
	// the reload, after Apply returns even on a loaded machine.
	check := model.Check{Enabled: true, Inter: 200 * time.Millisecond, Rise: 20, Fall: 1}
	cfg := model.Config{
		Frontends: []model.Frontend{{Name: "fe_web", Backend: "be_web", Binds: []model.Bind{{Addr: local, Port: uint16(fePort)}}}},
		Backends:  []*model.Backend{{Name: "be_web", Balance: "roundrobin", Check: check, Servers: []model.Server{{Addr: local, Port: uint16(dead)}}}},
	}
	if _, err := l.d.Apply(ctx, cfg); err != nil {
		t.Fatal(err)
	}
	persistEventually(t, 10*time.Second, "be_web/s1 DOWN", func() error {
		return l.opState("be_web", "s1", haproxy.OpStopped)
	})

	// The dead server leaves, the live one takes its slot, and a new
	// backend makes it a reload.
	next := model.Config{
		Frontends: cfg.Frontends,
		Backends: []*model.Backend{
			{Name: "be_other", Balance: "roundrobin", Servers: []model.Server{{Addr: local, Port: uint16(live)}}},
			{Name: "be_web", Balance: "roundrobin", Check: check, Servers: []model.Server{{Addr: local, Port: uint16(live)}}},
		},
	}
	res, err := l.d.Apply(ctx, next)
	if err != nil || !res.Reloaded {
		t.Fatalf("reloaded %v, %v", res.Reloaded, err)
	}
	if sl := l.d.layout["be_web"][0]; !sl.Used || sl.Server.Port != uint16(live) {
		t.Fatalf("the live server is not in the reused slot s1: %+v", l.d.layout["be_web"])
	}
	state, err := os.ReadFile(l.statePth)
	if err != nil {
		t.Fatal(err)
	}
	if strings.Contains(string(state), " be_web 1 s1 ") || strings.Contains(string(state), fmt.Sprintf(" s1 127.0.0.1 0 0 1 1 0 1 0 0 6 0 0 0 - %d ", dead)) {
		t.Fatalf("state file carries the former server of be_web/s1:\n%s", state)
	}
	if !strings.Contains(string(state), fmt.Sprintf("0 be_web 0 s1 127.0.0.1 0 0 1 1 0 1 0 0 6 0 0 0 - %d -\n", live)) {
		t.Fatalf("state file does not start the new server of be_web/s1 down:\n%s", state)
	}
	if err := l.opState("be_web", "s1", haproxy.OpStopped); err != nil {
		t.Fatalf("right after the reload: %v", err)
	}
	persistEventually(t, 30*time.Second, "traffic to the live server", func() error {
		got, err := lab.Probe(fmt.Sprintf("127.0.0.1:%d", fePort), time.Second)
		if err == nil && got != "hello" {
			err = fmt.Errorf("got %q", got)
		}
		return err
	})
}

// opState checks a slot's op state, on a new connection: one made before a
// reload would reach the old worker.
func (l *persistLab) opState(be, srv string, want int) error {
	rt := haproxy.NewRuntime(l.p.StatsSocket)
	defer rt.Close()
	states, err := rt.ShowServersState(context.Background())
	if err != nil {
		return err
	}
	for _, s := range states {
		if s.Backend == be && s.Server == srv {
			if s.OpState != want {
				return fmt.Errorf("%s/%s: op state %d, want %d", be, srv, s.OpState, want)
			}
			return nil
		}
	}
	return fmt.Errorf("%s/%s not found", be, srv)
}

// Run writes one change once the quiet period has passed, and writes
// within the maximum delay while changes keep coming.
func TestRunDebouncesWrites(t *testing.T) {
	l := startPersistLab(t)
	ctx := persistCtx(t)
	const quiet, maxDelay = 150 * time.Millisecond, 400 * time.Millisecond
	cfg := persistConfig(4, 6, 0)
	if _, err := l.d.Apply(ctx, cfg); err != nil {
		t.Fatal(err)
	}
	rctx, stop := context.WithCancel(ctx)
	done := make(chan struct{})
	go func() { l.d.Run(rctx, quiet, maxDelay); close(done) }()
	defer func() { stop(); <-done }()

	// One change: the files follow, written no sooner than quiet after it.
	cfg = persistConfig(4, 6, 1)
	start := time.Now()
	if _, err := l.d.Apply(ctx, cfg); err != nil {
		t.Fatal(err)
	}
	gone := " 10.0.0.1:30000\n"
	persistEventually(t, 5*time.Second, "config and state file written", func() error {
		if b, _ := os.ReadFile(l.cfgPath); strings.Contains(string(b), gone) {
			return errors.New("config still has the server that left")
		}
		// The flush writes the state file after the config.
		if fi, err := os.Stat(l.statePth); err != nil || !fi.ModTime().After(start) {
			return errors.New("state file not rewritten yet")
		}
		return nil
	})
	// File times come from the kernel's coarse clock: allow a tick.
	for _, path := range []string{l.cfgPath, l.statePth} {
		fi, err := os.Stat(path)
		if err != nil {
			t.Fatal(err)
		}
		if early := start.Add(quiet - 10*time.Millisecond); fi.ModTime().Before(early) {
			t.Fatalf("%s written %s after the change, before the quiet period %s", path, fi.ModTime().Sub(start), quiet)
		}
	}

	// Changes every 20 ms, for longer than the maximum delay: the server
	// that left before they started is written out while they go on.
	gone = " 10.0.0.2:30000\n"
	end := time.Now().Add(maxDelay + 2*time.Second)
	written := false
	for i := 0; time.Now().Before(end) && !written; i++ {
		cfg = persistConfig(4, 6, 2)
		cfg.Backends[3].Servers = cfg.Backends[3].Servers[:1+i%3] // what changes
		if _, err := l.d.Apply(ctx, cfg); err != nil {
			t.Fatal(err)
		}
		b, _ := os.ReadFile(l.cfgPath)
		written = !strings.Contains(string(b), gone)
		time.Sleep(20 * time.Millisecond) // spacing between changes only
	}
	if !written {
		t.Fatalf("nothing written within %s while changes kept coming", maxDelay+2*time.Second)
	}
}

func persistEventually(t testing.TB, within time.Duration, what string, cond func() error) {
	t.Helper()
	deadline := time.Now().Add(within)
	for {
		err := cond()
		if err == nil {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s: not true after %s: %v", what, within, err)
		}
		<-time.After(10 * time.Millisecond)
	}
}

// BenchmarkSaveState measures one save of the state file before a reload
// at 6,000 slots: streamed through the filter, and as it was done before
// (the whole dump in one string, filtered into another).
func BenchmarkSaveState(b *testing.B) {
	l := startPersistLab(b)
	ctx := persistCtx(b)
	if _, err := l.d.Apply(ctx, persistConfig(500, 8, 0)); err != nil {
		b.Fatal(err)
	}
	next, _ := plan.Assign(persistConfig(500, 9, 1), l.d.layout, true)
	b.Run("stream", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			l.d.stateMu.Lock()
			err := l.d.saveStateLocked(ctx, next, nil)
			l.d.stateMu.Unlock()
			if err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("whole", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			rt := haproxy.NewRuntime(l.p.StatsSocket)
			out, err := rt.ExecChecked(ctx, []string{"show servers state"})
			_ = rt.Close()
			if err != nil {
				b.Fatal(err)
			}
			text := legacyKeepUnchanged(out[0], next)
			err = atomicfile.WriteFunc(l.statePth, 0o644, func(f *os.File) error {
				_, err := f.WriteString(text + "\n")
				return err
			})
			if err != nil {
				b.Fatal(err)
			}
		}
	})
}

// TestFlushLendsTheLayout: a flush renders the driver's layout outside
// its lock without copying it (issue 29's peak: 2.1 MB at 10,000
// Services); a servers-only pass while it renders changes a copy, not the
// layout lent, and with no pass meanwhile the flush takes it back.
func TestFlushLendsTheLayout(t *testing.T) {
	l := startPersistLab(t)
	ctx := persistCtx(t)
	fast := 0
	l.d.opts.onServersOnly = func() { fast++ }
	cfg := persistConfig(3, 4, 0)
	if _, err := l.d.Apply(ctx, cfg); err != nil {
		t.Fatal(err)
	}
	if !l.d.flush(ctx) {
		t.Fatal("flush: not written")
	}
	l.d.mu.Lock()
	lent := l.d.lendLayout()
	was := lent["be_001"]
	l.d.mu.Unlock()

	next := model.Config{Backends: slices.Clone(cfg.Backends)}
	next.Backends[1] = cfg.Backends[1].WithServers(cfg.Backends[1].Servers[:2])
	next.Changes = &model.Changes{Base: cfg.Backends, Backends: []int{1}}
	if _, err := l.d.Apply(ctx, next); err != nil || fast != 1 {
		t.Fatalf("a servers-only pass: %v, %d taken by the servers-only path, want 1", err, fast)
	}
	l.d.mu.Lock()
	defer l.d.mu.Unlock()
	if got := lent["be_001"]; !slices.Equal(got, was) {
		t.Errorf("the layout lent changed under its render: %v, was %v", got, was)
	}
	if now := l.d.layout["be_001"]; slices.Equal(now, was) {
		t.Errorf("the servers-only pass did not change the driver's layout: %v", now)
	}
	if l.d.layoutLent {
		t.Error("still lent after the pass copied it")
	}
	l.d.mu.Unlock()
	if !l.d.flush(ctx) {
		t.Fatal("flush: not written")
	}
	l.d.mu.Lock()
	if l.d.layoutLent {
		t.Error("a flush with no pass meanwhile left the layout lent")
	}
}

// TestFlushCanceledLeavesStateDue: a flush whose context ends during
// the state dump (Run stopping as a pass's flush ran) reports it not
// written, so that Run's final flush writes the state file; reported
// written, the state file stayed older than the config beside it, and
// HAProxy restarted from disk kept a slot in maintenance that the config
// had in service (TestRestartsConverge in tproxy mode, CI 2026-11-30).
func TestFlushCanceledLeavesStateDue(t *testing.T) {
	l := startPersistLab(t)
	ctx := persistCtx(t)
	if _, err := l.d.Apply(ctx, persistConfig(1, 2, 0)); err != nil {
		t.Fatal(err)
	}
	if !l.d.flush(ctx) {
		t.Fatal("flush: not written")
	}
	if _, err := l.d.Apply(ctx, persistConfig(1, 3, 0)); err != nil {
		t.Fatal(err)
	}
	ended, cancel := context.WithCancel(ctx)
	cancel()
	if l.d.flush(ended) {
		t.Error("a flush whose context ended reported its files written")
	}
	if b, _ := os.ReadFile(l.statePth); strings.Contains(string(b), "10.0.0.3") {
		t.Fatal("the state file has the new server already: the dump did not fail")
	}
	if !l.d.flush(ctx) {
		t.Fatal("flush: not written")
	}
	if b, _ := os.ReadFile(l.statePth); !strings.Contains(string(b), "10.0.0.3") {
		t.Errorf("the state file lacks the new server 10.0.0.3:\n%s", b)
	}
}
