package controller

import (
	"slices"

	corev1 "k8s.io/api/core/v1"
)

// ReasonNotReadyKept is the reason of the Warning Event on each node kept
// as a server while NotReady (fail open).
const ReasonNotReadyKept = "NotReadyKept"

// failOpen reports the state in which every node that may serve is
// NotReady and the desired state keeps them all as servers
// (desired.Result.NotReadyKept, sorted): the gauge on every pass, one log
// line when the state begins and one when it ends, and on entering a
// Warning Event on each node kept (the leader only, as for problems).
func (c *Controller) failOpen(kept []string, nodes []*corev1.Node) {
	c.opts.Metrics.NotReadyKept(len(kept))
	was := len(c.notReadyKept) > 0
	c.notReadyKept = kept
	switch {
	case len(kept) > 0 && !was:
		c.log.Warn("every node NotReady: keeping them as servers (fail open) until one is Ready", "nodes", kept)
		if c.recorder == nil || (c.opts.Leading != nil && !c.opts.Leading()) {
			return
		}
		for _, n := range nodes {
			if _, ok := slices.BinarySearch(kept, n.Name); ok {
				c.recorder.Event(n, corev1.EventTypeWarning, ReasonNotReadyKept,
					"every node that may serve is NotReady: kept as a load balancer server (fail open) until a node is Ready; health checks still take a node that does not answer out")
			}
		}
	case len(kept) == 0 && was:
		c.log.Info("a node is Ready again: NotReady nodes no longer serve (fail open over)")
	}
}

// logSkipped logs, when they change, the node and endpoint addresses that
// are no servers (desired.Result.Skipped: unparsable, unspecified,
// multicast, broadcast, zoned), each naming its object: none vanishes
// without a word, and an unchanged list is not repeated every pass.
func (c *Controller) logSkipped(skipped []string) {
	if slices.Equal(skipped, c.skipped) {
		return
	}
	c.skipped = skipped
	for _, s := range skipped {
		c.log.Warn("address skipped: " + s)
	}
}
