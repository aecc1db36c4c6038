package apiserver

import (
	"strings"
	"testing"

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
