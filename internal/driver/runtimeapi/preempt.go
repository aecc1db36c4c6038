package runtimeapi

import (
	"cmp"
	"context"
	"github.com/haproxy-k8s-sync/haproxy-k8s-sync/internal/driver"
	"math"
	"slices"

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
// not send, in place of those recorded before (the pass planned them
// again): d.layout holds what they should run, d.actual what they run,
// and the next server-only pass plans them again, sending the oldest
// first (leftBehindFirst). A backend left behind again keeps the time it
// was first left behind.
func (d *HAProxy) markUnsent(unsent []plan.Op) {
	prev := d.unsent
	d.unsent = nil
	if len(unsent) == 0 {
		return
	}
	d.unsentSeq++
	d.unsent = make(map[string]uint64)
	for _, o := range unsent {
		if seq, ok := prev[o.Backend]; ok {
			d.unsent[o.Backend] = seq
		} else {
			d.unsent[o.Backend] = d.unsentSeq
		}
	}
	d.log.Info("newer change waiting: rest of the batch left to the next pass",
		"ops_left", len(unsent), "backends_left", len(d.unsent))
}

// leftBehindFirst orders ops (plan.Ops sorts them by backend name) so
// that the operations of backends an earlier pass left behind come first,
// the oldest first, and the new ones after them; within a backend the
// order stays. A pass cut short again then sends the oldest debt: without
// this, a stream of newer changes to backends whose names sort first (the
// model.NodesBackend, "_nodes", sorts before every Service's backend) holds
// the others back for as long as it lasts, a node leaving the backends
// that follow it at once and the others only once the stream ends.
func (d *HAProxy) leftBehindFirst(ops []plan.Op) {
	if len(d.unsent) == 0 {
		return
	}
	age := func(be string) uint64 {
		if seq, ok := d.unsent[be]; ok {
			return seq
		}
		return math.MaxUint64
	}
	slices.SortStableFunc(ops, func(a, b plan.Op) int { return cmp.Compare(age(a.Backend), age(b.Backend)) })
}
