package desired

import (
	"fmt"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"

	"github.com/haproxy-k8s-sync/haproxy-k8s-sync/internal/model"
)

// checkCase is one combination of what decides how a Service's servers
// are checked.
type checkCase struct {
	targets   string // TargetNodes, TargetPods
	policy    string // cluster, local (with a healthCheckNodePort), local-nohc (without)
	check     string // the check annotation: auto (also: unset), true, false
	nodeCheck bool   // --node-check configured (not none)
	localHC   bool   // --local-check=health-check-node-port
	track     bool   // --track-nodes (the Data Plane API driver turns it off)
}

func (c checkCase) String() string {
	return fmt.Sprintf("%s/%s/check=%s/nodecheck=%v/localcheck=%v/track=%v",
		c.targets, c.policy, c.check, c.nodeCheck, c.localHC, c.track)
}

// How the servers end up checked.
const (
	wantOwn   = "own check on the port traffic goes to"
	wantHC    = "own check on the healthCheckNodePort"
	wantTrack = "follow their node (and its node check, if any)"
	wantNone  = "no check, not following their node"
)

// checkRule is a row of the decision table: "" or "*" matches anything.
type checkRule struct {
	targets, policy, check, nodeCheck, localHC, track string
	want                                              string
}

func (r checkRule) matches(c checkCase) bool {
	m := func(pat, v string) bool { return pat == "" || pat == "*" || pat == v }
	b := func(v bool) string { return fmt.Sprint(v) }
	return m(r.targets, c.targets) && m(r.policy, c.policy) && m(r.check, c.check) &&
		m(r.nodeCheck, b(c.nodeCheck)) && m(r.localHC, b(c.localHC)) && m(r.track, b(c.track))
}

// checkTable is the decision, first matching row wins (docs/health-checks.md
// has the same table for users).
var checkTable = []checkRule{
	// Pod targets: no node to follow.
	{targets: TargetPods, check: "false", want: wantNone},
	{targets: TargetPods, want: wantOwn},
	// Node targets, explicit true: checked by themselves; a Local Service
	// on kube-proxy's healthCheckNodePort with --local-check.
	{check: "true", policy: "local", localHC: "true", want: wantHC},
	{check: "true", want: wantOwn},
	// Explicit false: follow the node when nodes are tracked.
	{check: "false", track: "true", want: wantTrack},
	{check: "false", want: wantNone},
	// auto: a Local Service with --local-check and a healthCheckNodePort
	// is checked there; otherwise the servers follow their node when it
	// is tracked and checked, and are checked by themselves if not
	// (--node-check=none, or the Data Plane API driver).
	{check: "auto", policy: "local", localHC: "true", want: wantHC},
	{check: "auto", track: "true", nodeCheck: "true", want: wantTrack},
	{check: "auto", want: wantOwn},
}

// Every combination of targets, policy, check setting, node check, local
// check and node tracking gives the check of the decision table, on the
// backend (check, track) and in the _nodes backend (present, checked with
// the node check, exactly when servers follow their node).
func TestCheckDecision(t *testing.T) {
	nodeCheck := model.Check{Enabled: true, Inter: 2 * time.Second, Rise: 2, Fall: 2, Port: 10256, HTTP: model.HTTPCheck{Path: "/healthz"}}
	var cases []checkCase
	for _, targets := range []string{TargetNodes, TargetPods} {
		for _, policy := range []string{"cluster", "local", "local-nohc"} {
			for _, check := range []string{"auto", "unset", "true", "false"} {
				for bits := range 8 {
					cases = append(cases, checkCase{targets, policy, check, bits&1 != 0, bits&2 != 0, bits&4 != 0})
				}
			}
		}
	}
	for _, c := range cases {
		t.Run(c.String(), func(t *testing.T) {
			var opts []svcOpt
			if c.check != "unset" {
				opts = append(opts, annotate("check", c.check))
			}
			switch c.policy {
			case "local":
				opts = append(opts, local, func(s *corev1.Service) { s.Spec.HealthCheckNodePort = 32100 })
			case "local-nohc":
				opts = append(opts, local)
			}
			o := defaults()
			o.Targets, o.TrackNodes, o.LocalHealthCheck = c.targets, c.track, c.localHC
			if c.nodeCheck {
				o.NodeCheck = nodeCheck
			}
			in := Input{
				Services: []*corev1.Service{svc("default", "web", 0, opts...)},
				Slices:   []*Slice{slice("default", "web", 8080, readyOn("10.1.0.1", "n1"), readyOn("10.1.0.2", "n2"))},
				Nodes:    nodes,
			}
			r := Compute(in, o)
			if len(r.Problems) > 0 {
				t.Fatalf("problems: %+v", r.Problems)
			}
			var be, nb *model.Backend
			for i, b := range r.Config.Backends {
				if b.Name == model.NodesBackend {
					nb = r.Config.Backends[i]
				} else {
					be = r.Config.Backends[i]
				}
			}
			if be == nil {
				t.Fatalf("no backend: %+v", r.Config.Backends)
			}
			cc := c
			if cc.check == "unset" {
				cc.check = "auto" // the built-in default
			}
			want := ""
			for _, rule := range checkTable {
				if rule.matches(cc) {
					want = rule.want
					break
				}
			}
			got := wantNone
			switch {
			case be.TrackNodes && be.Check.Enabled:
				t.Fatalf("both tracked and checked: HAProxy refuses it")
			case be.TrackNodes:
				got = wantTrack
			case be.Check.Enabled && be.Check.Port == 32100 && be.Check.HTTP.Path == "/":
				got = wantHC
			case be.Check.Enabled && be.Check.Port == 0 && be.Check.HTTP == (model.HTTPCheck{}):
				got = wantOwn
			case be.Check.Enabled:
				t.Fatalf("unexpected check %+v", be.Check)
			}
			if got != want {
				t.Errorf("servers: %s, want: %s", got, want)
			}
			if (nb != nil) != be.TrackNodes {
				t.Errorf("_nodes backend present %v, servers follow their node %v", nb != nil, be.TrackNodes)
			}
			if nb != nil && nb.Check != o.NodeCheck {
				t.Errorf("_nodes check %+v, want the node check %+v", nb.Check, o.NodeCheck)
			}
		})
	}
}

// The decision table names every outcome, and the defaults of a fresh
// install (node mode, check auto, node check on, tracking on) make the
// servers of Cluster and Local Services alike follow their node.
func TestCheckTableDefaults(t *testing.T) {
	seen := map[string]bool{}
	for _, r := range checkTable {
		seen[r.want] = true
	}
	for _, w := range []string{wantOwn, wantHC, wantTrack, wantNone} {
		if !seen[w] {
			t.Errorf("no row gives %q", w)
		}
	}
	for _, policy := range []string{"cluster", "local", "local-nohc"} {
		c := checkCase{targets: TargetNodes, policy: policy, check: "auto", nodeCheck: true, track: true}
		for _, r := range checkTable {
			if r.matches(c) {
				if r.want != wantTrack {
					t.Errorf("%v: %s", c, r.want)
				}
				break
			}
		}
	}
}
