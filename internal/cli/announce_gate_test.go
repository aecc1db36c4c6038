package cli

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net/netip"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/haproxy-k8s-sync/haproxy-k8s-sync/internal/announce"
	"github.com/haproxy-k8s-sync/haproxy-k8s-sync/internal/haproxy/haproxytest"
	"github.com/haproxy-k8s-sync/haproxy-k8s-sync/internal/metrics"
	"github.com/haproxy-k8s-sync/haproxy-k8s-sync/internal/model"
	"github.com/haproxy-k8s-sync/haproxy-k8s-sync/internal/testing/netlab"
)

// TestAnnounceGate: the host is unhealthy when the controller is not
// ready, or when its local HAProxy does not answer though it is; each
// failure names its part.
func TestAnnounceGate(t *testing.T) {
	ctx := context.Background()
	notReady := errors.New("informer caches not synced")
	ready := func(context.Context) error { return nil }
	check, stop := announce.HealthGate(func(context.Context) error { return notReady }, "")
	defer stop()
	if err := check(ctx); !errors.Is(err, notReady) || !errors.Is(err, announce.ErrGateNotReady) {
		t.Fatalf("not ready: %v", err)
	}
	check, stop = announce.HealthGate(ready, "")
	defer stop()
	if err := check(ctx); err != nil {
		t.Fatalf("ready, no local HAProxy: %v", err)
	}
	check, stop = announce.HealthGate(ready, filepath.Join(t.TempDir(), "no-haproxy.sock"))
	defer stop()
	if err := check(ctx); !errors.Is(err, announce.ErrGateHAProxy) {
		t.Fatalf("ready, the local HAProxy gone: %v", err)
	}
}

// TestConfigured: the gate's readiness beside the local HAProxy is the
// caches and a configuration applied once, not the last pass's outcome.
func TestConfigured(t *testing.T) {
	reg := metrics.New(metrics.Options{})
	for _, tc := range []struct {
		name     string
		synced   bool
		outcomes []string
		want     string // "" ready, else part of the error
	}{
		{"caches not synced", false, []string{metrics.OutcomeApplied}, "informer caches not synced"},
		{"no pass yet", true, nil, "no configuration applied yet"},
		{"only failed passes", true, []string{metrics.OutcomeError}, "no configuration applied yet"},
		{"applied", true, []string{metrics.OutcomeApplied}, ""},
		{"deferred", true, []string{metrics.OutcomeDeferred}, ""},
		{"applied, then failed (apiserver gone)", true, []string{metrics.OutcomeApplied, metrics.OutcomeError, metrics.OutcomeError}, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			inst := reg.Instance(strings.NewReplacer(" ", "_", ",", "", "(", "", ")", "").Replace(tc.name))
			for _, o := range tc.outcomes {
				inst.Pass(o, time.Millisecond)
			}
			err := configured(func() bool { return tc.synced }, inst)(context.Background())
			switch {
			case tc.want == "" && err != nil:
				t.Errorf("not ready: %v", err)
			case tc.want != "" && (err == nil || !strings.Contains(err.Error(), tc.want)):
				t.Errorf("got %v, want an error containing %q", err, tc.want)
			}
		})
	}
}

// TestGateSlowAnswers: an apiserver outage on a loaded node. The last
// pass failed and the local HAProxy answers, but every answer slower
// than a gate tick (three ticks), for twice the grace: the host stays
// healthy (the announcer is told nothing new), each answer waited for
// on its connection rather than dropped at the tick's end; then a
// socket's own deadline reported at once, for most of the grace:
// healthy. A hung HAProxy (no answer at all) fails after the grace, its
// log line saying so; HAProxy gone (its socket refuses): unhealthy
// within a few ticks, the log naming HAProxy.
func TestGateSlowAnswers(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	inst := metrics.New(metrics.Options{}).Instance("slow")
	inst.Pass(metrics.OutcomeApplied, time.Millisecond)
	inst.Pass(metrics.OutcomeError, time.Millisecond) // the apiserver gone
	// how HAProxy answers: 0 at once, 1 three ticks late, 3 a socket's
	// deadline at once, 4 never (hung), 2 refused
	var mode atomic.Int32
	var onTime atomic.Int64 // answers on time
	ask := func(ctx context.Context) error {
		switch mode.Load() {
		case 1:
			select {
			case <-ctx.Done():
				return fmt.Errorf("exec: %w", ctx.Err())
			case <-time.After(3 * announce.GateEvery): // the answer's delay, not a wait for anything
				return nil
			}
		case 4:
			<-ctx.Done()
			return fmt.Errorf("exec: %w", ctx.Err())
		case 3: // the socket's deadline first, ctx not yet marked done
			return fmt.Errorf("connect: %w", os.ErrDeadlineExceeded)
		case 2:
			return fmt.Errorf("connect: %w", syscall.ECONNREFUSED)
		}
		onTime.Add(1)
		return nil
	}
	vip := netip.MustParseAddr("192.0.2.10")
	rec := &wants{}
	d := announce.NewDriver(rec, vip)
	if _, err := d.Apply(ctx, model.Config{}); err != nil {
		t.Fatal(err)
	}
	var logs haproxytest.LockedBuffer
	go d.Gate(ctx, announce.GateEvery, announce.HealthCheck(configured(func() bool { return true }, inst), ask), slog.New(slog.NewTextHandler(&logs, nil)))
	healthy := func(want bool, within time.Duration) {
		t.Helper()
		if err := netlab.Eventually(ctx, within, func() error {
			if w, _ := rec.last(); w.Healthy != want {
				return fmt.Errorf("told %+v, want healthy=%v", w, want)
			}
			return nil
		}); err != nil {
			t.Fatal(err)
		}
	}
	onTimeTwice := func() {
		t.Helper()
		n := onTime.Load()
		mode.Store(0)
		if err := netlab.Eventually(ctx, 5*time.Second, func() error {
			if onTime.Load() < n+2 {
				return errors.New("not answered on time twice")
			}
			return nil
		}); err != nil {
			t.Fatal(err)
		}
	}
	healthy(true, 5*time.Second)
	_, told := rec.last()
	for _, tc := range []struct {
		mode int32
		span time.Duration
	}{{1, 2 * announce.AnswerGrace}, {3, announce.AnswerGrace * 7 / 10}} {
		mode.Store(tc.mode)
		end := time.Now().Add(tc.span)
		for time.Now().Before(end) {
			if w, n := rec.last(); n != told || !w.Healthy {
				t.Fatalf("HAProxy slow (mode %d): the announcer was told %+v (%d Wants, %d before)\n%s", tc.mode, w, n, told, logs.String())
			}
			time.Sleep(announce.GateEvery / 4) // the pace of the checks, not a wait for anything
		}
		onTimeTwice()
	}
	mode.Store(4)
	start := time.Now()
	healthy(false, announce.AnswerGrace+2*time.Second)
	t.Logf("HAProxy hung: unhealthy after %s", time.Since(start).Round(time.Millisecond))
	if hung := time.Since(start); hung < announce.AnswerGrace-announce.GateEvery {
		t.Errorf("HAProxy hung: unhealthy after %s, before the grace (%s)", hung, announce.AnswerGrace)
	}
	if l := logs.String(); !strings.Contains(l, "no answer yet") {
		t.Errorf("the hang not logged as such:\n%s", l)
	}
	onTimeTwice()
	healthy(true, 2*time.Second)
	mode.Store(2)
	start = time.Now()
	healthy(false, 2*time.Second)
	t.Logf("HAProxy gone: unhealthy after %s", time.Since(start).Round(time.Millisecond))
	if l := logs.String(); !strings.Contains(l, "health gate fails") || !strings.Contains(l, announce.ErrGateHAProxy.Error()) {
		t.Fatalf("the failure not logged with its part:\n%s", l)
	}
}
