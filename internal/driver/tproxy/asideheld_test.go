package tproxy

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"net/netip"
	"os"
	"path/filepath"
	"slices"
	"syscall"
	"testing"
	"time"

	"github.com/haproxy-k8s-sync/haproxy-k8s-sync/internal/driver"
	"github.com/haproxy-k8s-sync/haproxy-k8s-sync/internal/driver/runtimeapi"
	"github.com/haproxy-k8s-sync/haproxy-k8s-sync/internal/haproxy/haproxytest"
	"github.com/haproxy-k8s-sync/haproxy-k8s-sync/internal/model"
	"github.com/haproxy-k8s-sync/haproxy-k8s-sync/internal/render"
	"github.com/haproxy-k8s-sync/haproxy-k8s-sync/internal/spares"
	"github.com/haproxy-k8s-sync/haproxy-k8s-sync/internal/testing/netlab"
)

// heldReload is the gate of a lab's reloads: once hold is called, the next
// reload's re-executed master waits (before it parses anything) until
// release, reading a FIFO the test writes to; the reloads after it are not
// held. began: the file the wrapper creates as the held reload waits.
type heldReload struct {
	fifo, flag, began string
}

// heldReloads has the lab's HAProxy (set before it starts) go through a
// wrapper that holds a reload at hold's request (heldReload). The
// release at the test's end lets a reload still held go.
func heldReloads(t *testing.T) *heldReload {
	dir := t.TempDir()
	h := &heldReload{fifo: filepath.Join(dir, "release"), flag: filepath.Join(dir, "hold"), began: filepath.Join(dir, "began")}
	if err := syscall.Mkfifo(h.fifo, 0o600); err != nil {
		t.Fatal(err)
	}
	wrapper := filepath.Join(dir, "haproxy-held-reload")
	script := fmt.Sprintf("#!/bin/bash\nif [ -n \"$HAPROXY_MWORKER_REEXEC\" ] && [ -e %[1]s ]; then rm -f %[1]s; touch %[2]s; read -r _ < %[3]s; fi\nexec -a %[4]s %[5]s \"$@\"\n",
		h.flag, h.began, h.fifo, wrapper, haproxytest.Bin())
	if err := os.WriteFile(wrapper, []byte(script), 0o755); err != nil {
		t.Fatal(err)
	}
	t.Setenv("HAPROXY_BIN", wrapper)
	t.Cleanup(func() {
		_ = os.Remove(h.flag)
		h.letGo() // a reload still held (the test failed): let it end
	})
	return h
}

// hold has the next reload wait for release.
func (h *heldReload) hold(t *testing.T) {
	if err := os.WriteFile(h.flag, nil, 0o644); err != nil {
		t.Fatal(err)
	}
}

// waitHeld polls (within a deadline) until the held reload waits.
func (h *heldReload) waitHeld(t *testing.T) {
	t.Helper()
	err := netlab.Eventually(context.Background(), 20*time.Second, func() error {
		_, err := os.Stat(h.began)
		return err
	})
	if err != nil {
		t.Fatalf("the growth's reload never began: %v", err)
	}
}

// release lets the held reload go on: it polls (within a deadline) until
// the waiting wrapper reads the FIFO, then writes it a line.
func (h *heldReload) release(t *testing.T) {
	t.Helper()
	err := netlab.Eventually(context.Background(), 20*time.Second, func() error {
		if !h.letGo() {
			return errors.New("no reload waits on the FIFO")
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
}

// letGo writes the FIFO a line if a reader waits on it (no wait if none).
func (h *heldReload) letGo() bool {
	f, err := os.OpenFile(h.fifo, os.O_WRONLY|syscall.O_NONBLOCK, 0)
	if err != nil {
		return false // ENXIO: no reader
	}
	defer f.Close()
	_, err = f.WriteString("go\n")
	return err == nil
}

// passDeadline bounds a pass that should return at once: one that waits
// for the held reload instead never returns until that is released.
const passDeadline = 20 * time.Second

// applyWithin is an Apply on its own goroutine that must return within
// passDeadline; on the deadline the held reload is released (so that the
// pass ends) and the test fails.
func (l *dpLab) applyWithin(t *testing.T, h *heldReload, what string, cfg model.Config) (driver.Result, error) {
	t.Helper()
	type out struct {
		res driver.Result
		err error
	}
	c := make(chan out, 1)
	go func() {
		res, err := l.drv.Apply(context.Background(), cfg)
		c <- out{res, err}
	}()
	select {
	case o := <-c:
		return o.res, o.err
	case <-time.After(passDeadline):
		h.release(t)
		<-c
		t.Fatalf("%s: the pass did not return while the growth's reload was under way: it waited for that reload", what)
		return driver.Result{}, nil
	}
}

// TestPassReturnsDuringHeldGrowthReload (issue 29, grow12's reload aside):
// the interleaving TestPassesDuringGrowthReloadsConverge meets by chance,
// forced every run. The pool's growth reload is held (its re-executed
// master waits on a FIFO until the test writes to it), so the growth's
// pass and each pass after it return while that reload is under way, as
// under way (Again, or ErrDeferred with RetryAfter for a Service waiting
// for the growth's spares), not reloaded: a new Service in a free spare
// (answered before the reload ends), a Service's servers changing, a
// Service gone, a new Service no free spare fits; then new Services until
// one finds no spare at all: its pass returns deferred (ErrDeferred,
// RetryAfter, the Service waiting for a spare, not answered), the others
// answered. Then the reload is let go: the passes converge, every Service
// answered by exactly its servers, every map the worker holds its file.
func TestPassReturnsDuringHeldGrowthReload(t *testing.T) {
	h := heldReloads(t)
	l := startDPWith(t, render.ListenersTProxy, spares.Policy{Spares: 3, Other: 1, LowWater: 1})
	l.hopts.GrowAside = true
	l.restart(t, l.hopts)
	svc := l.outgrowing(t)
	servers := map[uint16]int{80: 1, 81: 0, 83: 2} // port: servers of Service p<port>
	cfgOf := func() model.Config {
		var cfg model.Config
		ports := slices.Sorted(maps.Keys(servers))
		for _, p := range ports {
			fe, be := svc(fmt.Sprintf("p%d", p), p, servers[p])
			cfg.Frontends, cfg.Backends = append(cfg.Frontends, fe), append(cfg.Backends, be)
		}
		return cfg
	}
	l.apply(t, cfgOf())
	before := l.reloads(t)

	// p81's servers outgrow its spare: it takes the class's large spare
	// and the pool grows another, a reload, held.
	h.hold(t)
	servers[81] = plan4 + 1
	steps := []struct {
		name     string
		change   func()
		fewer    string            // a Service served by fewer servers than it has until the growth
		answered map[uint16]string // answered meanwhile by the old worker ("": not served)
	}{
		{"the growth", func() {}, "", map[uint16]string{80: "s0"}},
		{"a new Service in a free spare", func() { servers[82] = 1 }, "", map[uint16]string{82: "s0"}},
		{"a Service's servers change", func() { servers[83] = 1 }, "", nil},
		{"a Service goes", func() { delete(servers, 80) }, "", map[uint16]string{80: ""}},
		{"a new Service no free spare fits", func() { servers[84] = plan4 + 1 }, "default/p84", nil},
	}
	for i, s := range steps {
		s.change()
		res, err := l.applyWithin(t, h, s.name, cfgOf())
		if err != nil && !errors.Is(err, driver.ErrDeferred) {
			t.Fatalf("%s: %v", s.name, err)
		}
		if i == 0 {
			h.waitHeld(t) // the growth's reload is told to the master before its pass returns
		}
		switch {
		case res.Reloaded:
			t.Fatalf("%s: reloaded while the growth's reload is held", s.name)
		case err != nil || res.Again <= 0:
			t.Fatalf("%s: %v, again %v; want applied, the loop to come back for the reload under way", s.name, err, res.Again)
		case s.fewer != "" && !slices.ContainsFunc(res.Refused, func(r driver.Refusal) bool {
			return r.Service == s.fewer && r.Reason == runtimeapi.ReasonServedByFewerServers
		}):
			t.Fatalf("%s: refused %v; want %s served by the slots of a free spare until the growth", s.name, res.Refused, s.fewer)
		}
		want := map[netip.AddrPort]string{}
		for p, a := range s.answered {
			want[netip.AddrPortFrom(vipA, p)] = a
		}
		expect(t, want, l.lab.Client, netip.Addr{})
	}
	// New Services, one a pass, until the spares the running worker has
	// are all taken: the first that finds none waits for the growth's
	// (ErrDeferred, RetryAfter; refused as waiting) and is not answered;
	// each before it is.
	waited := uint16(0)
	for p := uint16(90); p < 110 && waited == 0; p++ {
		servers[p] = 1
		name := fmt.Sprintf("new Service p%d", p)
		res, err := l.applyWithin(t, h, name, cfgOf())
		answer := "s0"
		switch {
		case res.Reloaded:
			t.Fatalf("%s: reloaded while the growth's reload is held", name)
		case errors.Is(err, driver.ErrDeferred):
			if res.RetryAfter <= 0 || !slices.ContainsFunc(res.Refused, func(r driver.Refusal) bool {
				return r.Service == fmt.Sprintf("default/p%d", p) && r.Reason == runtimeapi.ReasonWaitingForSpare
			}) {
				t.Fatalf("%s: deferred, retry after %v, refused %v; want it waiting for a spare", name, res.RetryAfter, res.Refused)
			}
			waited, answer = p, ""
		case err != nil || res.Again <= 0:
			t.Fatalf("%s: %v, again %v; want applied, the loop to come back for the reload under way", name, err, res.Again)
		}
		expect(t, map[netip.AddrPort]string{netip.AddrPortFrom(vipA, p): answer}, l.lab.Client, netip.Addr{})
	}
	if waited == 0 {
		t.Fatal("20 new Services, none waited for a spare: the test no longer exercises a pass deferred beside the reload")
	}
	if _, err := os.Stat(h.flag); err == nil {
		t.Fatal("no reload was held: the steps did not run beside the growth's reload")
	}

	h.release(t)
	l.settle(t, cfgOf())
	// The held growth's reload, and the growth that the waiting Service,
	// placed in a spare that reload brought, asks of the pool (one spare
	// free per class, LowWater).
	if got := l.reloads(t) - before; got != 2 {
		t.Errorf("%d reloads, want 2: the held growth's, then the next growth's", got)
	}
	want := map[uint16]int{80: 0}
	for p, n := range servers {
		want[p] = n
	}
	l.serves(t, want)
	l.mapsAreFiles(t)
}
