package controller

import (
	"strings"

	corev1 "k8s.io/api/core/v1"

	"github.com/haproxy-k8s-sync/haproxy-k8s-sync/internal/desired"
)

// ReasonAddressSkipped is the reason of the Warning Event on a node whose
// InternalIP is no server (desired.NodeAddrsSkipped).
const ReasonAddressSkipped = "AddressSkipped"

// nodeAddrEvents gives each node whose InternalIP is no server a Warning
// Event saying why, once per message, as problems of Services are
// reported (the leader only; a replica that comes to lead reports what
// remains): the node is then no load balancer server, and the one who
// can fix its address looks at the node. A node whose addresses are
// fixed is forgotten. skipped is the pass's desired.Result.Skipped: with
// none, and none reported, nothing is walked.
//
// Endpoint addresses stay log-only (logSkipped): the apiserver already
// refuses most such addresses in an EndpointSlice (unparsable,
// unspecified, link-local), none in a Node's status.
func (c *Controller) nodeAddrEvents(skipped []string, nodes []*corev1.Node) {
	if c.opts.Leading != nil && !c.opts.Leading() {
		return
	}
	if len(c.skippedNodes) == 0 && !nodeSkipped(skipped) {
		return
	}
	seen := make(map[string]bool, len(c.skippedNodes))
	for _, n := range nodes {
		whys := desired.NodeAddrsSkipped(n)
		if len(whys) == 0 {
			continue
		}
		msg := strings.Join(whys, "; ") + ": the node is no load balancer server"
		seen[n.Name] = true
		if c.skippedNodes[n.Name] == msg {
			continue
		}
		if c.skippedNodes == nil {
			c.skippedNodes = map[string]string{}
		}
		c.skippedNodes[n.Name] = msg
		if c.recorder != nil {
			c.recorder.Event(n, corev1.EventTypeWarning, ReasonAddressSkipped, msg)
		}
	}
	for name := range c.skippedNodes {
		if !seen[name] {
			delete(c.skippedNodes, name)
		}
	}
}

// nodeSkipped reports whether skipped names a node's address.
func nodeSkipped(skipped []string) bool {
	for _, s := range skipped {
		if strings.HasPrefix(s, "Node ") {
			return true
		}
	}
	return false
}
