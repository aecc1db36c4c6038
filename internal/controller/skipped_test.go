package controller

import (
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/tools/record"

	"github.com/haproxy-k8s-sync/haproxy-k8s-sync/internal/desired"
)

func addrNode(name, ip string) *corev1.Node {
	return &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: name},
		Status: corev1.NodeStatus{Addresses: []corev1.NodeAddress{{Type: corev1.NodeInternalIP, Address: ip}}}}
}

// A node whose InternalIP is no server gets a Warning Event saying why,
// once per message and only from the leader (a replica that comes to
// lead reports what remains), and again when it comes back after being
// fixed: issue 28, where such an address was only logged.
func TestNodeAddrSkippedEvent(t *testing.T) {
	good1, good2 := addrNode("n1", "192.0.2.1"), addrNode("n2", "192.0.2.2")
	zero, multicast := addrNode("n1", "0.0.0.0"), addrNode("n2", "224.0.0.1")
	type addrPass struct {
		nodes   []*corev1.Node
		leading bool
		events  int // Events emitted by the pass
	}
	bad := `Warning AddressSkipped InternalIP "0.0.0.0" is the unspecified address: not a server: the node is no load balancer server`
	for _, tc := range []struct {
		name   string
		passes []addrPass
	}{
		{name: "reported once, again after a fix", passes: []addrPass{
			{[]*corev1.Node{good1, good2}, true, 0},
			{[]*corev1.Node{zero, good2}, true, 1},
			{[]*corev1.Node{zero, good2}, true, 0},
			{[]*corev1.Node{zero, multicast}, true, 1},
			{[]*corev1.Node{good1, good2}, true, 0},
			{[]*corev1.Node{zero, good2}, true, 1},
		}},
		{name: "the leader reports", passes: []addrPass{
			{[]*corev1.Node{zero, good2}, false, 0},
			{[]*corev1.Node{zero, good2}, true, 1},
			{[]*corev1.Node{zero, good2}, true, 0},
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			rec := record.NewFakeRecorder(20)
			leading := false
			c := New(nil, &countingDriver{}, rec, Options{Leading: func() bool { return leading }})
			for i, p := range tc.passes {
				leading = p.leading
				in := desired.Input{Nodes: p.nodes}
				c.nodeAddrEvents(desired.Compute(in, desired.Options{}).Skipped, p.nodes)
				var events []string
				for len(rec.Events) > 0 {
					events = append(events, <-rec.Events)
				}
				if len(events) != p.events {
					t.Fatalf("pass %d: events %q, want %d", i, events, p.events)
				}
				for _, e := range events {
					if !strings.HasPrefix(e, "Warning AddressSkipped InternalIP ") || (strings.Contains(e, "0.0.0.0") && e != bad) {
						t.Errorf("pass %d: event %q, want %q", i, e, bad)
					}
				}
			}
		})
	}
}
