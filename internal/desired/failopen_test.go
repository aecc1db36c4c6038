package desired

import (
	"reflect"
	"slices"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"

	"github.com/haproxy-k8s-sync/haproxy-k8s-sync/internal/model"
)

// withReady sets a node's Ready condition to st (Unknown: what the
// node-lifecycle controller writes when the kubelet stops reporting).
func withReady(n *corev1.Node, st corev1.ConditionStatus) *corev1.Node {
	n.Status.Conditions = []corev1.NodeCondition{{Type: corev1.NodeReady, Status: st}}
	return n
}

var excluded = map[string]string{ExcludeLabel: ""}

// Every node that may serve NotReady at once: they all stay eligible
// (fail open); an excluded node stays out and is no reason either way.
func TestNodesFailOpen(t *testing.T) {
	for _, tc := range []struct {
		name  string
		nodes []*corev1.Node
		up    string // the eligible nodes, sorted
		kept  []string
	}{{
		name:  "one node Ready: the NotReady ones are out",
		nodes: []*corev1.Node{node("n1", "10.0.0.1", true, nil), node("n2", "10.0.0.2", false, nil)},
		up:    "n1",
	}, {
		name:  "every node NotReady: all stay",
		nodes: []*corev1.Node{node("n1", "10.0.0.1", false, nil), node("n2", "10.0.0.2", false, nil)},
		up:    "n1 n2", kept: []string{"n1", "n2"},
	}, {
		name: "Ready Unknown (the node-lifecycle controller's) and no Ready condition count as NotReady",
		nodes: []*corev1.Node{withReady(node("n1", "10.0.0.1", false, nil), corev1.ConditionUnknown),
			withReady(node("n2", "10.0.0.2", false, nil), "")},
		up: "n1 n2", kept: []string{"n1", "n2"},
	}, {
		name: "every node NotReady, one excluded: the excluded one stays out",
		nodes: []*corev1.Node{node("n3", "10.0.0.3", false, nil), node("n1", "10.0.0.1", false, nil),
			node("n2", "10.0.0.2", false, excluded)},
		up: "n1 n3", kept: []string{"n1", "n3"},
	}, {
		name: "the only Ready node is excluded: the others stay, NotReady",
		nodes: []*corev1.Node{node("n1", "10.0.0.1", true, excluded), node("n2", "10.0.0.2", false, nil),
			node("n3", "10.0.0.3", false, nil)},
		up: "n2 n3", kept: []string{"n2", "n3"},
	}, {
		name:  "every node excluded: none",
		nodes: []*corev1.Node{node("n1", "10.0.0.1", false, excluded), node("n2", "10.0.0.2", true, excluded)},
		up:    "",
	}, {
		name:  "a Ready node without an InternalIP cannot serve: the others stay",
		nodes: []*corev1.Node{node("n1", "not-an-ip", true, nil), node("n2", "10.0.0.2", false, nil)},
		up:    "n2", kept: []string{"n2"},
	}, {
		name:  "no nodes",
		nodes: nil,
		up:    "",
	}} {
		t.Run(tc.name, func(t *testing.T) {
			got, kept := nodeAddrs(tc.nodes)
			var up []string
			for _, n := range tc.nodes {
				if got[n.Name].up {
					up = append(up, n.Name)
				}
			}
			slices.Sort(up)
			if strings.Join(up, " ") != tc.up || !reflect.DeepEqual(kept, tc.kept) {
				t.Errorf("eligible %q kept %q, want %q and %q", strings.Join(up, " "), kept, tc.up, tc.kept)
			}
		})
	}
}

// What the servers of a node-mode Service are when every node is
// NotReady: the nodes stay (following their node or not), endpoints keep
// their Kubernetes meaning (no ready endpoint of a Cluster Service: no
// servers, kube-proxy refuses it on every node), and pod mode is
// untouched. The memo's passes agree with a full pass, coming from every
// node Ready.
func TestServersWhenEveryNodeNotReady(t *testing.T) {
	allReady := []*corev1.Node{node("n1", "10.0.0.1", true, nil), node("n2", "10.0.0.2", true, nil),
		node("n3", "10.0.0.3", true, excluded)}
	noneReady := []*corev1.Node{node("n1", "10.0.0.1", false, nil), withReady(node("n2", "10.0.0.2", false, nil), corev1.ConditionUnknown),
		node("n3", "10.0.0.3", true, excluded)}
	readyEp := func(ip, n string) ep { return ep{ip: ip, node: n, ready: true, serving: true} }
	for _, tc := range []struct {
		name    string
		svc     []svcOpt
		track   bool
		targets string
		slices  []*Slice
		want    map[string]string
		kept    []string
	}{{
		name: "cluster policy: every node not excluded",
		want: map[string]string{"be_default_web_80": "10.0.0.1:30080 10.0.0.2:30080"},
		kept: []string{"n1", "n2"},
	}, {
		name:  "cluster policy, servers following their nodes: the nodes' servers in service, the excluded one not",
		svc:   []svcOpt{annotate("check", "false")},
		track: true,
		want: map[string]string{"be_default_web_80": "10.0.0.1:30080 10.0.0.2:30080 10.0.0.3:30080",
			model.NodesBackend: "10.0.0.1:0 10.0.0.2:0 10.0.0.3:0(maint)"}, // n3's follows its node, excluded
		kept: []string{"n1", "n2"},
	}, {
		name:   "local policy: the nodes with ready endpoints",
		svc:    []svcOpt{local},
		slices: []*Slice{slice("default", "web", 8080, readyEp("192.168.0.1", "n1"), readyEp("192.168.0.3", "n3"))},
		want:   map[string]string{"be_default_web_80": "10.0.0.1:30080"},
		kept:   []string{"n1", "n2"},
	}, {
		name: "cluster policy, no endpoint ready (the Pods marked NotReady too): no servers, as kube-proxy refuses",
		slices: []*Slice{slice("default", "web", 8080, ep{ip: "192.168.0.1", node: "n1"},
			ep{ip: "192.168.0.2", node: "n2"})},
		want: map[string]string{"be_default_web_80": ""},
		kept: []string{"n1", "n2"},
	}, {
		name:    "pod mode: the ready endpoints, whatever their node",
		targets: TargetPods,
		slices:  []*Slice{slice("default", "web", 8080, readyEp("192.168.0.1", "n1"), ep{ip: "192.168.0.2", node: "n2"})},
		want:    map[string]string{"be_default_web_80": "192.168.0.1:8080"},
		kept:    []string{"n1", "n2"},
	}} {
		t.Run(tc.name, func(t *testing.T) {
			o := defaults()
			o.TrackNodes = tc.track
			if tc.targets != "" {
				o.Targets = tc.targets
			}
			in := Input{Services: []*corev1.Service{svc("default", "web", 0, tc.svc...)}, Nodes: noneReady, Slices: tc.slices}
			full := Compute(in, o)
			if got := withMaint(full); !reflect.DeepEqual(got, tc.want) || !reflect.DeepEqual(full.NotReadyKept, tc.kept) {
				t.Errorf("servers %v kept %q, want %v and %q", got, full.NotReadyKept, tc.want, tc.kept)
			}
			in.Memo = &Memo{}
			in.Nodes = allReady
			if r := Compute(in, o); r.NotReadyKept != nil {
				t.Errorf("every node Ready: kept %q", r.NotReadyKept)
			}
			in.Nodes = noneReady
			if got := withMaint(Compute(in, o)); !reflect.DeepEqual(got, tc.want) {
				t.Errorf("with a memo, after every node Ready: servers %v, want %v", got, tc.want)
			}
		})
	}
}

// withMaint is servers, with "(maint)" after a server in maintenance.
func withMaint(r Result) map[string]string {
	out := map[string]string{}
	for _, b := range r.Config.Backends {
		var parts []string
		for _, s := range b.Servers {
			p := s.Key().String()
			if s.Maint {
				p += "(maint)"
			}
			parts = append(parts, p)
		}
		out[b.Name] = strings.Join(parts, " ")
	}
	return out
}
