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
	if got := nodesCheck(Compute(in, o)); got != o.NodeCheck {
		t.Fatalf("servers-only pass: %+v", got)
	}
	if in.Memo.fastPasses == 0 {
		t.Fatal("no servers-only pass")
	}
	o.NodeCheck = model.Check{}
	if got := nodesCheck(Compute(in, o)); got != o.NodeCheck {
		t.Fatalf("after turning it off: %+v", got)
	}
}
