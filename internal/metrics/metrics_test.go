package metrics

import (
	"net/netip"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus/testutil"

	"github.com/haproxy-k8s-sync/haproxy-k8s-sync/internal/model"
	"github.com/haproxy-k8s-sync/haproxy-k8s-sync/internal/plan"
)

func TestReloadReason(t *testing.T) {
	fe := func(name string) model.Frontend { return model.Frontend{Name: name, Backend: name} }
	be := func(name string) *model.Backend { return &model.Backend{Name: name, Balance: "roundrobin"} }
	running := model.Config{Frontends: []model.Frontend{fe("a"), fe("b")}, Backends: []*model.Backend{be("a"), be("b")}}
	changedB := be("b")
	changedB.Balance = "leastconn"
	for _, tc := range []struct {
		name    string
		reasons []string
		want    string
	}{
		{"none", nil, ReasonOther},
		{"unknown", []string{"something new"}, ReasonOther},
		{"frontend added", plan.Reasons(running, model.Config{Frontends: []model.Frontend{fe("a"), fe("b"), fe("c")}, Backends: running.Backends}), ReasonFrontendAdded},
		{"backend changed", plan.Reasons(running, model.Config{Frontends: running.Frontends, Backends: []*model.Backend{be("a"), changedB}}), ReasonBackendChanged},
		{"removed", plan.Reasons(running, model.Config{Frontends: running.Frontends[:1], Backends: running.Backends[:1]}), ReasonFrontendRemoved},
		// The HAProxy driver's own reasons (internal/driver/runtimeapi/haproxy.go).
		{"restart", []string{"running config 0123abcd differs from desired"}, ReasonConfigDiffers},
		{"exhausted", []string{"server slots exhausted in be_x"}, ReasonSlotsExhausted},
		{"resized", []string{"server slots resized"}, ReasonSlotsResized},
		{"reload mode", []string{"servers changed (apply mode reload)"}, ReasonApplyReload},
		{"first known wins", []string{"backend changed be_x", "frontend added fe_y"}, ReasonFrontendAdded},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := ReloadReason(tc.reasons); got != tc.want {
				t.Errorf("ReloadReason(%q) = %s, want %s", tc.reasons, got, tc.want)
			}
		})
	}
}

func TestInstanceRecords(t *testing.T) {
	r := New(Options{Version: "v1.2.3", PerService: true})
	in := r.Instance("haproxy")
	in.Pass(OutcomeApplied, 30*time.Millisecond)
	in.Pass(OutcomeError, time.Second)
	in.Phase(PhaseCheck, 0) // did not run: not observed
	in.Phase(PhaseReload, 70*time.Millisecond)
	in.Reload([]string{"frontend added fe_a"}, true)
	in.Reload([]string{"backend changed be_a"}, false)
	in.RuntimeCommands(7, 2)
	in.Drift()
	in.Services(3, map[string]int{"PortConflict": 1, "SomethingNew": 2})
	in.Services(3, map[string]int{"PortConflict": 1}) // SomethingNew went away: 0

	n1, n2 := netip.MustParseAddr("10.0.0.1"), netip.MustParseAddr("10.0.0.2")
	in.Model(model.Config{
		Frontends: []model.Frontend{{Name: "fe_a"}},
		Backends: []*model.Backend{
			{Name: model.NodesBackend, Servers: []model.Server{{Addr: n1}, {Addr: n2, Maint: true}}},
			{Name: "be_a", Service: "default/a", TrackNodes: true, Servers: []model.Server{{Addr: n1, Port: 1}, {Addr: n2, Port: 1}}},
			{Name: "be_b", Service: "other/b", Servers: []model.Server{{Addr: n1, Port: 2, Drain: true}}},
		},
	})

	want := `
# HELP haproxy_k8s_sync_servers Servers in the desired configuration, by state (ready, drain, maint).
# TYPE haproxy_k8s_sync_servers gauge
haproxy_k8s_sync_servers{driver="haproxy",state="drain"} 1
haproxy_k8s_sync_servers{driver="haproxy",state="maint"} 1
haproxy_k8s_sync_servers{driver="haproxy",state="ready"} 1
# HELP haproxy_k8s_sync_backends Service backends in the desired configuration (the _nodes backend not counted).
# TYPE haproxy_k8s_sync_backends gauge
haproxy_k8s_sync_backends{driver="haproxy"} 2
# HELP haproxy_k8s_sync_reloads_total HAProxy reloads that succeeded, by the first reason of each.
# TYPE haproxy_k8s_sync_reloads_total counter
haproxy_k8s_sync_reloads_total{driver="haproxy",reason="frontend_added"} 1
# HELP haproxy_k8s_sync_reload_failures_total Reloads that failed (config rejected, reload failed or timed out), by the first reason of each.
# TYPE haproxy_k8s_sync_reload_failures_total counter
haproxy_k8s_sync_reload_failures_total{driver="haproxy",reason="backend_changed"} 1
# HELP haproxy_k8s_sync_runtime_commands_total Runtime API commands sent to HAProxy.
# TYPE haproxy_k8s_sync_runtime_commands_total counter
haproxy_k8s_sync_runtime_commands_total{driver="haproxy"} 7
# HELP haproxy_k8s_sync_runtime_command_failures_total Runtime API commands of batches that failed (rejected by HAProxy, or the socket failed).
# TYPE haproxy_k8s_sync_runtime_command_failures_total counter
haproxy_k8s_sync_runtime_command_failures_total{driver="haproxy"} 2
# HELP haproxy_k8s_sync_services_refused Services with a problem in the last pass, by reason (InvalidAnnotation includes Services kept on their last good settings).
# TYPE haproxy_k8s_sync_services_refused gauge
haproxy_k8s_sync_services_refused{driver="haproxy",reason="InvalidAnnotation"} 0
haproxy_k8s_sync_services_refused{driver="haproxy",reason="NoNodePort"} 0
haproxy_k8s_sync_services_refused{driver="haproxy",reason="PortConflict"} 1
haproxy_k8s_sync_services_refused{driver="haproxy",reason="SomethingNew"} 0
haproxy_k8s_sync_services_refused{driver="haproxy",reason="UnsupportedProtocol"} 0
# HELP haproxy_k8s_sync_service_servers Servers of each Service's backends by state (only with per-Service metrics on).
# TYPE haproxy_k8s_sync_service_servers gauge
haproxy_k8s_sync_service_servers{driver="haproxy",namespace="default",service="a",state="drain"} 0
haproxy_k8s_sync_service_servers{driver="haproxy",namespace="default",service="a",state="maint"} 1
haproxy_k8s_sync_service_servers{driver="haproxy",namespace="default",service="a",state="ready"} 1
haproxy_k8s_sync_service_servers{driver="haproxy",namespace="other",service="b",state="drain"} 1
haproxy_k8s_sync_service_servers{driver="haproxy",namespace="other",service="b",state="maint"} 0
haproxy_k8s_sync_service_servers{driver="haproxy",namespace="other",service="b",state="ready"} 0
`
	names := []string{"haproxy_k8s_sync_servers", "haproxy_k8s_sync_backends", "haproxy_k8s_sync_reloads_total",
		"haproxy_k8s_sync_reload_failures_total", "haproxy_k8s_sync_runtime_commands_total",
		"haproxy_k8s_sync_runtime_command_failures_total", "haproxy_k8s_sync_services_refused", "haproxy_k8s_sync_service_servers"}
	if err := testutil.GatherAndCompare(r.Gatherer(), strings.NewReader(want), names...); err != nil {
		t.Error(err)
	}
	if n := testutil.CollectAndCount(r.passDuration); n != 3 {
		t.Errorf("pass duration series: %d, want one per outcome", n)
	}
	if n := testutil.CollectAndCount(r.phaseDuration); n != 1 {
		t.Errorf("phase series: %d, want only the phase that ran", n)
	}
	if got := in.LastOutcome(); got != OutcomeError {
		t.Errorf("LastOutcome = %q", got)
	}
	if v := testutil.ToFloat64(r.lastSuccess.WithLabelValues("haproxy")); v < float64(time.Now().Add(-time.Minute).Unix()) {
		t.Errorf("last success time %v, want about now", v)
	}
	problems, err := testutil.GatherAndLint(r.Gatherer())
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range problems {
		t.Errorf("lint: %s: %s", p.Metric, p.Text)
	}
}

func TestPerServiceOffByDefault(t *testing.T) {
	r := New(Options{})
	r.Instance("haproxy").Model(model.Config{Backends: []*model.Backend{{Name: "be_a", Service: "default/a", Servers: []model.Server{{Addr: netip.MustParseAddr("10.0.0.1")}}}}})
	mfs, err := r.Gatherer().Gather()
	if err != nil {
		t.Fatal(err)
	}
	for _, mf := range mfs {
		if mf.GetName() == "haproxy_k8s_sync_service_servers" {
			t.Fatalf("per-Service series exported without PerService")
		}
	}
}

func TestNilInstanceIsANoOp(t *testing.T) {
	var in *Instance
	in.Pass(OutcomeApplied, time.Second)
	in.Phase(PhaseParse, time.Second)
	in.Reload([]string{"x"}, true)
	in.RuntimeCommands(1, 0)
	in.Drift()
	in.Services(1, nil)
	in.Model(model.Config{})
	if in.LastOutcome() != "" {
		t.Error("nil instance has an outcome")
	}
}
