package runtimeapi

import (
	"context"
	"github.com/haproxy-k8s-sync/haproxy-k8s-sync/internal/driver"

	"github.com/haproxy-k8s-sync/haproxy-k8s-sync/internal/plan"
)

// A pass that changes thousands of servers (a node excluded at 10,000
// Services) keeps HAProxy busy for tens of milliseconds. When a newer
// change arrives meanwhile, finishing the old batch first only delays it,
// and may be moot (the node comes back). Server-only passes therefore send
// their operations in chunks and stop between chunks when the caller says
// a newer pass is waiting; the operations not sent are planned again, from
// what HAProxy actually runs, by that next pass.

// opsWindow is how many operations a pass that may be preempted keeps
// sent but unanswered: a few milliseconds of HAProxy's time, so HAProxy
// never waits for the controller, and a newer pass waits at most that.
const opsWindow = 500

// execOpsPreemptible is execOps that stops sending when a newer pass
// waits. It returns the operations it did not send (none unless preempted).
func (d *HAProxy) execOpsPreemptible(ctx context.Context, ops []plan.Op, res *driver.Result) ([]plan.Op, error) {
	var stop func() bool
	if driver.Preemptible(ctx) {
		stop = func() bool { return driver.Preempted(ctx) }
	}
	sent, err := d.sendOps(ctx, ops, res, stop)
	return ops[sent:], err
}

// markUnsent records the backends whose operations a preempted pass did
// not send: d.layout holds what they should run, d.actual what they run,
// and the next server-only pass plans them again.
func (d *HAProxy) markUnsent(unsent []plan.Op) {
	if len(unsent) == 0 {
		return
	}
	if d.unsent == nil {
		d.unsent = make(map[string]struct{})
	}
	for _, o := range unsent {
		d.unsent[o.Backend] = struct{}{}
	}
	d.log.Info("newer change waiting: rest of the batch left to the next pass",
		"ops_left", len(unsent), "backends_left", len(d.unsent))
}
