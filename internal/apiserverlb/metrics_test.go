package apiserverlb

import (
	"context"
	"io"
	"log/slog"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus/testutil"

	"github.com/haproxy-k8s-sync/haproxy-k8s-sync/internal/metrics"
)

// The loop reports its passes through the shared recorder: outcome,
// Runtime API commands, servers by state, and its workqueue.
func TestLoopMetrics(t *testing.T) {
	reg := metrics.New(metrics.Options{Version: "test"}) // before the loop's queue
	inst := reg.Instance("apiserver")
	static := aps("192.0.2.31:6443", "192.0.2.32:6443")
	h := start(t, Options{Sources: []string{SourceStatic}, Static: static, Metrics: inst}, nil)
	if h.loop.Known() && len(h.drv.all()) == 0 {
		t.Fatal("Known before any pass")
	}
	eventually(t, "an applied pass", func() bool { return inst.LastOutcome() == metrics.OutcomeApplied })
	if !h.loop.Known() {
		t.Error("Known = false after a pass applied a list")
	}
	want := `
# HELP haproxy_k8s_sync_servers Servers in the desired configuration, by state (ready, drain, maint).
# TYPE haproxy_k8s_sync_servers gauge
haproxy_k8s_sync_servers{driver="apiserver",state="drain"} 0
haproxy_k8s_sync_servers{driver="apiserver",state="maint"} 0
haproxy_k8s_sync_servers{driver="apiserver",state="ready"} 2
# HELP haproxy_k8s_sync_frontends Frontends in the desired configuration.
# TYPE haproxy_k8s_sync_frontends gauge
haproxy_k8s_sync_frontends{driver="apiserver"} 1
`
	if err := testutil.GatherAndCompare(reg.Gatherer(), strings.NewReader(want),
		"haproxy_k8s_sync_servers", "haproxy_k8s_sync_frontends"); err != nil {
		t.Error(err)
	}
	mfs, err := reg.Gatherer().Gather()
	if err != nil {
		t.Fatal(err)
	}
	found := map[string]bool{}
	for _, mf := range mfs {
		for _, m := range mf.GetMetric() {
			for _, l := range m.GetLabel() {
				if l.GetValue() == "haproxy-k8s-sync-apiserver" || (l.GetName() == "driver" && l.GetValue() == "apiserver") {
					found[mf.GetName()] = true
				}
			}
		}
	}
	for _, name := range []string{"haproxy_k8s_sync_pass_duration_seconds", "haproxy_k8s_sync_runtime_commands_total",
		"haproxy_k8s_sync_last_success_timestamp_seconds", "haproxy_k8s_sync_workqueue_adds_total"} {
		if !found[name] {
			t.Errorf("no %s series of the apiserver loop", name)
		}
	}
}

// drifting is a driver whose every verification finds drift.
type drifting struct{ recorder }

func (d *drifting) Verify(context.Context) (bool, error) { return true, nil }

// A resync that finds HAProxy's state differing counts as a drift
// correction, as in the Service mode.
func TestLoopMetricsDrift(t *testing.T) {
	reg := metrics.New(metrics.Options{Version: "test"})
	inst := reg.Instance("apiserver")
	s, err := NewShape([]string{":6443"}, defaults())
	if err != nil {
		t.Fatal(err)
	}
	l := New(&drifting{}, nil, Options{Sources: []string{SourceStatic}, Static: aps("192.0.2.31:6443"), Shape: s, Port: 6443,
		ResyncPeriod: 20 * time.Millisecond, Metrics: inst, Logger: slog.New(slog.NewTextHandler(io.Discard, nil))})
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- l.Run(ctx) }()
	defer func() { cancel(); <-done }()
	eventually(t, "a drift correction counted", func() bool {
		mfs, err := reg.Gatherer().Gather()
		if err != nil {
			t.Fatal(err)
		}
		for _, mf := range mfs {
			if mf.GetName() == "haproxy_k8s_sync_resync_drift_corrections_total" {
				for _, m := range mf.GetMetric() {
					if m.GetCounter().GetValue() >= 1 {
						return true
					}
				}
			}
		}
		return false
	})
}
