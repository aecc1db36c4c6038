package desired

import (
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"

	"github.com/haproxy-k8s-sync/haproxy-k8s-sync/internal/model"
)

// The node check is the check of the model.NodesBackend, on the full and
// on the servers-only pass alike; changing it starts the memo afresh.
func TestNodeCheckOnNodesBackend(t *testing.T) {
	o := defaults()
	o.TrackNodes = true
	o.NodeCheck = model.Check{Enabled: true, Inter: 2 * time.Second, Rise: 2, Fall: 2, Port: 10256, HTTP: model.HTTPCheck{Path: "/healthz"}}
	in := Input{Services: []*corev1.Service{svc("default", "web", 0, annotate("check", "false"))}, Nodes: nodes, Memo: &Memo{}}
	nodesCheck := func(r Result) model.Check {
		for _, b := range r.Config.Backends {
			if b.Name == model.NodesBackend {
				return b.Check
			}
		}
		t.Fatal("no nodes backend")
		return model.Check{}
	}
	if got := nodesCheck(Compute(in, o)); got != o.NodeCheck {
		t.Fatalf("full pass: %+v", got)
	}
	in.Nodes = nodes[:3] // a node goes: a servers-only pass
	res := Compute(in, o)
	if got := nodesCheck(res); got != o.NodeCheck {
		t.Fatalf("servers-only pass: %+v", got)
	}
	if !res.ServersOnly {
		t.Fatal("no servers-only pass")
	}
	o.NodeCheck = model.Check{}
	if got := nodesCheck(Compute(in, o)); got != o.NodeCheck {
		t.Fatalf("after turning it off: %+v", got)
	}
}

// With LocalHealthCheck, the servers of a checked Local Service in node mode
// are checked on its healthCheckNodePort with GET /; nothing else changes.
func TestLocalHealthCheck(t *testing.T) {
	hc := func(s *corev1.Service) { s.Spec.HealthCheckNodePort = 32100 }
	tests := []struct {
		name    string
		svc     *corev1.Service
		targets string
		off     bool // LocalHealthCheck off
		want    model.Check
	}{
		{name: "local", svc: svc("default", "web", 0, local, hc),
			want: model.Check{Enabled: true, Port: 32100, HTTP: model.HTTPCheck{Path: "/"}}},
		{name: "option off", svc: svc("default", "web", 0, local, hc), off: true, want: model.Check{Enabled: true}},
		{name: "cluster policy", svc: svc("default", "web", 0), want: model.Check{Enabled: true}},
		{name: "no healthCheckNodePort", svc: svc("default", "web", 0, local), want: model.Check{Enabled: true}},
		{name: "checks off", svc: svc("default", "web", 0, local, hc, annotate("check", "false")), want: model.Check{}},
		{name: "backend-port keeps its own port", svc: svc("default", "web", 0, local, hc, annotate("backend-port", "31000")), want: model.Check{Enabled: true}},
		{name: "pod targets", svc: svc("default", "web", 0, local, hc), targets: TargetPods, want: model.Check{Enabled: true}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			o := defaults()
			o.LocalHealthCheck = !tc.off
			if tc.targets != "" {
				o.Targets = tc.targets
			}
			r := Compute(Input{Services: []*corev1.Service{tc.svc}, Nodes: nodes}, o)
			if len(r.Config.Backends) != 1 {
				t.Fatalf("backends: %+v", r.Config.Backends)
			}
			got := r.Config.Backends[0].Check
			got.Inter, got.Rise, got.Fall = 0, 0, 0
			if got != tc.want {
				t.Errorf("check = %+v, want %+v", got, tc.want)
			}
		})
	}
}

// With CarryNodeCheck (the Data Plane API's single-Service mode with
// --node-check given) the servers that would follow their node, but
// cannot, carry the node check themselves; the others keep their check.
func TestCarryNodeCheck(t *testing.T) {
	node := model.Check{Enabled: true, Inter: time.Second, Rise: 2, Fall: 2, Port: 10256, HTTP: model.HTTPCheck{Path: "/healthz"}}
	hc := func(s *corev1.Service) { s.Spec.HealthCheckNodePort = 32100 }
	own := model.Check{Enabled: true, Inter: 2 * time.Second, Rise: 2, Fall: 3}
	tests := []struct {
		name       string
		svc        *corev1.Service
		carry      bool
		track      bool
		targets    string
		localCheck bool
		want       model.Check
		wantTrack  bool
	}{
		{name: "auto", svc: svc("default", "web", 0), carry: true, want: node},
		{name: "check false: no check of its own, the node's", svc: svc("default", "web", 0, annotate("check", "false")), carry: true, want: node},
		{name: "check true: its own port", svc: svc("default", "web", 0, annotate("check", "true")), carry: true, want: own},
		{name: "Local with its healthCheckNodePort", svc: svc("default", "web", 0, local, hc), carry: true, localCheck: true,
			want: model.Check{Enabled: true, Inter: 2 * time.Second, Rise: 2, Fall: 3, Port: 32100, HTTP: model.HTTPCheck{Path: "/"}}},
		{name: "Local, --local-check=service-port", svc: svc("default", "web", 0, local, hc), carry: true, want: node},
		{name: "pod targets: their own port", svc: svc("default", "web", 0), carry: true, targets: TargetPods, want: own},
		{name: "not asked for: its own port, as the older controller", svc: svc("default", "web", 0), want: own},
		{name: "servers following their node: unchanged", svc: svc("default", "web", 0), carry: true, track: true, want: model.Check{Inter: 2 * time.Second, Rise: 2, Fall: 3}, wantTrack: true},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			o := defaults()
			o.Service, o.Backend = "default/web", "be_ops"
			o.NodeCheck, o.CarryNodeCheck, o.TrackNodes, o.LocalHealthCheck = node, tc.carry, tc.track, tc.localCheck
			if tc.targets != "" {
				o.Targets = tc.targets
			}
			r := Compute(Input{Services: []*corev1.Service{tc.svc}, Nodes: nodes}, o)
			var be *model.Backend
			for _, b := range r.Config.Backends {
				if b.Name != model.NodesBackend {
					be = b
				}
			}
			if be == nil {
				t.Fatalf("no backend: %+v", r.Config.Backends)
			}
			if be.Check != tc.want || be.TrackNodes != tc.wantTrack {
				t.Errorf("check %+v track %v, want %+v track %v", be.Check, be.TrackNodes, tc.want, tc.wantTrack)
			}
		})
	}
}
