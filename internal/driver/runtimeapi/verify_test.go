package runtimeapi

import (
	"context"
	"fmt"
	"github.com/haproxy-k8s-sync/haproxy-k8s-sync/internal/driver"
	"net/netip"
	"os"
	"reflect"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/haproxy-k8s-sync/haproxy-k8s-sync/internal/haproxy"
	"github.com/haproxy-k8s-sync/haproxy-k8s-sync/internal/haproxy/haproxytest"
	"github.com/haproxy-k8s-sync/haproxy-k8s-sync/internal/model"
	"github.com/haproxy-k8s-sync/haproxy-k8s-sync/internal/plan"
)

// verifyLab is a real HAProxy driven by a driver that applied cfg, plus a
// runtime connection of the test's own for changes behind the driver's
// back.
type verifyLab struct {
	t    *testing.T
	p    *haproxytest.Process
	d    *HAProxy
	cfg  model.Config
	ctrl *haproxy.Runtime
	path string // haproxy.cfg
}

func verifyServers(be, n int) []model.Server {
	var out []model.Server
	for i := range n {
		out = append(out, model.Server{Addr: netip.AddrFrom4([4]byte{10, 1, byte(be), byte(i + 1)}), Port: 30000})
	}
	return out
}

// startVerifyLab applies backends be_0.. of three servers (eight slots).
func startVerifyLab(t *testing.T, backends int) *verifyLab {
	t.Helper()
	lb := startLab(t)
	p, d, path := lb.p, lb.d, lb.cfgPath
	ctrl := haproxy.NewRuntime(p.StatsSocket)
	t.Cleanup(func() { _ = ctrl.Close() })
	l := &verifyLab{t: t, p: p, d: d, ctrl: ctrl, path: path}
	var cfg model.Config
	for i := range backends {
		cfg.Backends = append(cfg.Backends, &model.Backend{Name: fmt.Sprintf("be_%d", i), Balance: "roundrobin", Servers: verifyServers(i, 3)})
	}
	if res := l.apply(cfg); !res.Reloaded {
		t.Fatal("first apply did not reload")
	}
	return l
}

func (l *verifyLab) ctx() context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	l.t.Cleanup(cancel)
	return ctx
}

func (l *verifyLab) apply(cfg model.Config) driver.Result {
	l.t.Helper()
	res, err := l.d.Apply(l.ctx(), cfg)
	if err != nil {
		l.t.Fatalf("apply: %v", err)
	}
	l.cfg = cfg
	return res
}

func (l *verifyLab) verify() bool {
	l.t.Helper()
	drift, err := l.d.Verify(l.ctx())
	if err != nil {
		l.t.Fatalf("verify: %v", err)
	}
	return drift
}

// withServers is l.cfg with other servers in backend i.
func (l *verifyLab) withServers(i int, servers []model.Server) model.Config {
	cfg := model.Config{Frontends: l.cfg.Frontends, Backends: slices.Clone(l.cfg.Backends)}
	cfg.Backends[i] = cfg.Backends[i].WithServers(servers) // l.cfg's backends are shared
	return cfg
}

// haproxyState reads HAProxy's slot states through the prompt-mode client
// (not the scan under test).
func (l *verifyLab) haproxyState() plan.Runtime {
	l.t.Helper()
	states, err := l.ctrl.ShowServersState(l.ctx())
	if err != nil {
		l.t.Fatal(err)
	}
	var b plan.RuntimeBuilder
	for _, s := range states {
		b.Add(s.Backend, s.Server, actualOf(s))
	}
	rt, foreign := b.Finish()
	if len(foreign) > 0 {
		l.t.Fatalf("HAProxy has backends not rendered: %v", foreign)
	}
	return rt
}

// checkInSync asserts that the driver knows what HAProxy runs, and that
// HAProxy runs the layout of the last config applied.
func (l *verifyLab) checkInSync() {
	l.t.Helper()
	got := l.haproxyState()
	l.d.mu.Lock()
	defer l.d.mu.Unlock()
	if !l.d.known {
		l.t.Fatal("state unknown")
	}
	if !reflect.DeepEqual(got, l.d.actual) {
		l.t.Fatalf("HAProxy runs\n%v\ndriver believes\n%v", got, l.d.actual)
	}
	want, _ := plan.Assign(l.cfg, l.d.layout, false)
	if ops, missing := plan.Ops(want, got); len(ops) > 0 || len(missing) > 0 {
		l.t.Fatalf("HAProxy differs from the config applied: ops %v, missing %v", ops, missing)
	}
}

// pauseAt makes the next Verify stop at point until the returned release
// is called; reached is closed when it gets there.
func (l *verifyLab) pauseAt(point string) (reached <-chan struct{}, release func()) {
	r, gate := make(chan struct{}), make(chan struct{})
	var once sync.Once
	release = func() { once.Do(func() { close(gate) }) }
	l.t.Cleanup(release)
	l.d.verify.hook = func(p string) {
		if p == point {
			close(r)
			<-gate
		}
	}
	return r, release
}

type verifyResult struct {
	drift bool
	err   error
}

func (l *verifyLab) verifyAsync() <-chan verifyResult {
	out := make(chan verifyResult, 1)
	go func() {
		drift, err := l.d.Verify(l.ctx())
		out <- verifyResult{drift, err}
	}()
	return out
}

func waitFor[T any](t *testing.T, ch <-chan T, what string) T {
	t.Helper()
	select {
	case v := <-ch:
		return v
	case <-time.After(10 * time.Second):
		t.Fatalf("%s: timed out", what)
		panic("unreachable")
	}
}

// A pass completes while Verify reads HAProxy's state, and a backend the
// pass changed is not "corrected" back to what the (older) dump showed.
func TestVerifyDoesNotHoldUpApply(t *testing.T) {
	for _, point := range []string{"dump-started", "dump-done"} {
		t.Run(point, func(t *testing.T) {
			l := startVerifyLab(t, 4)
			reached, release := l.pauseAt(point)
			done := l.verifyAsync()
			waitFor(t, reached, "verify reaching "+point)

			// Verify is stopped in the middle of its read: this pass
			// would never end if it waited for it.
			servers := append(verifyServers(1, 3)[1:], model.Server{Addr: netip.MustParseAddr("10.2.0.9"), Port: 30001})
			next := l.withServers(1, servers)
			applied := make(chan driver.Result, 1)
			go func() { applied <- l.apply(next) }()
			res := waitFor(t, applied, "apply during verify")
			if res.Ops == 0 || res.Reloaded {
				t.Fatalf("apply: %d ops, reloaded %v; want runtime ops", res.Ops, res.Reloaded)
			}

			release()
			if v := waitFor(t, done, "verify"); v.err != nil || v.drift {
				t.Fatalf("verify = %v, %v; want no drift", v.drift, v.err)
			}
			l.checkInSync()
			if res := l.apply(next); res.Ops != 0 {
				t.Fatalf("a second pass sent %d ops", res.Ops)
			}
		})
	}
}

// A slot changed behind the controller's back is found by Verify and put
// back by the next pass, without a reload.
func TestVerifyCorrectsDrift(t *testing.T) {
	l := startVerifyLab(t, 3)
	if l.verify() {
		t.Fatal("drift right after apply")
	}
	l.d.mu.Lock()
	slots := l.d.layout["be_2"]
	l.d.mu.Unlock()
	usedSlot, freeSlot := "", ""
	for i, sl := range slots {
		switch {
		case sl.Used && usedSlot == "":
			usedSlot = model.SlotName(i)
		case !sl.Used && freeSlot == "":
			freeSlot = model.SlotName(i)
		}
	}
	tests := []struct {
		name    string
		cmds    []string
		needsOp bool // false: a free slot's address, which no operation restores
	}{
		{"used slot in maintenance", []string{"set server be_2/" + usedSlot + " state maint"}, true},
		{"used slot drained", []string{"set server be_2/" + usedSlot + " state drain"}, true},
		{"used slot moved", []string{"set server be_2/" + usedSlot + " addr 10.9.9.9 port 9"}, true},
		{"free slot in service", []string{"set server be_2/" + freeSlot + " state ready"}, true},
		{"free slot moved", []string{"set server be_2/" + freeSlot + " addr 10.9.9.8 port 8"}, false},
		{"two backends", []string{"set server be_0/" + usedSlot + " state maint", "set server be_1/" + freeSlot + " state ready"}, true},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			l.t = t
			if _, err := l.ctrl.ExecChecked(l.ctx(), tc.cmds); err != nil {
				t.Fatal(err)
			}
			if !l.verify() {
				t.Fatal("verify saw no drift")
			}
			res := l.apply(l.cfg)
			if res.Reloaded || (res.Ops == 0) == tc.needsOp {
				t.Fatalf("pass after drift: %d ops, reloaded %v", res.Ops, res.Reloaded)
			}
			l.checkInSync()
			if l.verify() {
				t.Fatal("drift after the correcting pass")
			}
		})
	}
}

// Verify hands over to a full read-back when HAProxy runs another worker,
// drops what it read when a reload overlapped it, and does nothing while
// the state is unknown.
func TestVerifyStructure(t *testing.T) {
	t.Run("restart behind the back", func(t *testing.T) {
		l := startVerifyLab(t, 2)
		l.p.Restart(t)
		if !l.verify() {
			t.Fatal("a new worker is no drift")
		}
		if l.d.known {
			t.Fatal("state still known after a restart")
		}
		if res := l.apply(l.cfg); res.Reloaded {
			t.Fatal("the restarted HAProxy runs the same config; reloaded")
		}
		l.checkInSync()
	})
	t.Run("reload during the read", func(t *testing.T) {
		l := startVerifyLab(t, 2)
		reached, release := l.pauseAt("dump-done")
		done := l.verifyAsync()
		waitFor(t, reached, "verify reaching dump-done")
		next := l.withServers(0, verifyServers(0, 1))
		next.Backends = append(next.Backends, &model.Backend{Name: "be_9", Balance: "roundrobin", Servers: verifyServers(9, 2)})
		if res := l.apply(next); !res.Reloaded {
			t.Fatal("a new backend did not reload")
		}
		release()
		if v := waitFor(t, done, "verify"); v.err != nil || v.drift {
			t.Fatalf("verify = %v, %v; want its read dropped", v.drift, v.err)
		}
		l.checkInSync()
	})
	t.Run("unknown state", func(t *testing.T) {
		l := startVerifyLab(t, 1)
		l.d.verify.hook = func(p string) { t.Errorf("verify read (%s) while the state is unknown", p) }
		l.d.Invalidate()
		if l.verify() {
			t.Fatal("drift reported without reading")
		}
	})
}

// A running config with our structure hash whose servers are not the
// slots render writes is reloaded, not patched.
func TestReadBackForeignSlotsReloads(t *testing.T) {
	l := startVerifyLab(t, 2)
	b, err := os.ReadFile(l.path)
	if err != nil {
		t.Fatal(err)
	}
	text := string(b)
	at := strings.Index(text, "backend be_1\n")
	i := strings.Index(text[at:], "\tserver s2 ")
	if at < 0 || i < 0 {
		t.Fatalf("no be_1/s2 in\n%s", text)
	}
	i += at
	text = text[:i] + "\tserver web2 " + text[i+len("\tserver s2 "):]
	if err := os.WriteFile(l.path, []byte(text), 0o644); err != nil {
		t.Fatal(err)
	}
	l.p.Restart(t)
	l.d.Invalidate()
	res := l.apply(l.cfg)
	if !res.Reloaded || !slices.ContainsFunc(res.Reasons, func(r string) bool { return strings.Contains(r, foreignHash) }) {
		t.Fatalf("reloaded %v, reasons %v; want a reload for the foreign slots", res.Reloaded, res.Reasons)
	}
	l.checkInSync()
}
