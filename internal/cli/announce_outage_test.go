package cli

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"net/netip"
	"os"
	"sync"
	"testing"
	"time"

	"github.com/haproxy-k8s-sync/haproxy-k8s-sync/internal/announce"
	"github.com/haproxy-k8s-sync/haproxy-k8s-sync/internal/metrics"
	"github.com/haproxy-k8s-sync/haproxy-k8s-sync/internal/model"
	"github.com/haproxy-k8s-sync/haproxy-k8s-sync/internal/source"
	"github.com/haproxy-k8s-sync/haproxy-k8s-sync/internal/testing/kubeapi"
	"github.com/haproxy-k8s-sync/haproxy-k8s-sync/internal/testing/netlab"
)

// wants records what an announcer is told (every Set).
type wants struct {
	mu  sync.Mutex
	all []announce.Want
}

func (w *wants) Set(x announce.Want)           { w.mu.Lock(); w.all = append(w.all, x); w.mu.Unlock() }
func (w *wants) Run(ctx context.Context) error { <-ctx.Done(); return nil }
func (w *wants) last() (announce.Want, int) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if len(w.all) == 0 {
		return announce.Want{}, 0
	}
	return w.all[len(w.all)-1], len(w.all)
}

// TestAnnounceThroughAPIServerOutage: with the real apiserver stopped,
// the announcer's health gate (its readiness over the informers' synced
// generation after a failed pass, as run wires it) keeps passing and the announcer is told
// nothing new: no address is dropped or moved for an apiserver outage;
// nor when the apiserver is back and the informers relist. The outage
// lasts 5 s, or HKS_APISERVER_OUTAGE (a duration: make failover runs
// the 10 minutes).
func TestAnnounceThroughAPIServerOutage(t *testing.T) {
	if os.Getenv("HKS_TESTBIN_DIR") == "" {
		t.Skip("HKS_TESTBIN_DIR not set (hack/testbin.sh)")
	}
	outage := 5 * time.Second
	if v := os.Getenv("HKS_APISERVER_OUTAGE"); v != "" {
		d, err := time.ParseDuration(v)
		if err != nil || d <= 0 {
			t.Fatalf("HKS_APISERVER_OUTAGE=%q: want a positive duration", v)
		}
		outage = d
	}
	kube := kubeapi.Start(t)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	src := source.New(kube.Client(t), "")
	if err := src.Start(ctx, time.Minute); err != nil {
		t.Fatal(err)
	}
	inst := metrics.New(metrics.Options{}).Instance("outage")
	inst.Pass(metrics.OutcomeApplied, time.Millisecond)
	// then a pass failed, as passes may while the apiserver is gone
	inst.Pass(metrics.OutcomeError, time.Millisecond)
	vip := netip.MustParseAddr("192.0.2.10")
	rec := &wants{}
	d := announce.NewDriver(rec, vip)
	if _, err := d.Apply(ctx, model.Config{}); err != nil {
		t.Fatal(err)
	}
	// the gate as run wires it beside the local HAProxy (its answers
	// here always on time: TestGateSlowAnswers has the slow ones)
	check := announce.HealthCheck(configured(src.Synced, inst), func(context.Context) error { return nil })
	go d.Gate(ctx, announce.GateEvery, check, slog.New(slog.NewTextHandler(io.Discard, nil)))
	if err := netlab.Eventually(ctx, 10*time.Second, func() error {
		if w, _ := rec.last(); !w.Healthy || len(w.Addrs) != 1 || w.Addrs[0] != vip {
			return fmt.Errorf("told %+v, want %s healthy", w, vip)
		}
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	_, told := rec.last()
	steady := func(d time.Duration, what string) {
		t.Helper()
		end := time.Now().Add(d)
		for time.Now().Before(end) {
			if w, n := rec.last(); n != told || !w.Healthy {
				t.Fatalf("%s: the announcer was told %+v (%d Wants, %d before)", what, w, n, told)
			}
			time.Sleep(announce.GateEvery) // the pace of the checks, not a wait for anything
		}
	}
	kube.StopAPIServer()
	start := time.Now()
	steady(outage, "the apiserver stopped")
	t.Logf("the apiserver stopped for %s: the announcer told nothing new", time.Since(start).Round(time.Second))
	if err := kube.StartAPIServer(); err != nil {
		t.Fatal(err)
	}
	steady(3*time.Second, "the apiserver back")
}
