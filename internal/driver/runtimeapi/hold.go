package runtimeapi

import (
	"github.com/haproxy-k8s-sync/haproxy-k8s-sync/internal/model"
	"github.com/haproxy-k8s-sync/haproxy-k8s-sync/internal/plan"
)

// ops is plan.Ops of layout against what HAProxy runs now, with the
// slots that come into service held until their check passes
// (untilChecked): every path that applies a layout at runtime takes its
// operations from here, so none brings a slot in unchecked, and none
// touches a backend whose servers are being created again (renew.go:
// heldForRenewal).
func (d *HAProxy) ops(layout model.Layout, cfg model.Config) ([]plan.Op, []string) {
	ops, missing := plan.Ops(layout, d.actual)
	d.createArgs(ops, cfg) // runtimeslots.go
	return untilChecked(d.heldForRenewal(ops), d.actual, cfg), missing
}

// untilChecked holds the slots of ops that come into service in a backend
// of cfg checked by its own health check until that check passes
// (plan.UntilChecked), from the runtime state rt the ops start from.
// Servers following their node (TrackNodes: HAProxy refuses to force a
// tracking server's health; the node's check decides) and the nodes' own
// servers (model.NodesBackend) are not held.
func untilChecked(ops []plan.Op, rt plan.Runtime, cfg model.Config) []plan.Op {
	return plan.UntilChecked(ops, rt, checkedBy(cfg))
}

// checkedBy reports which backends of cfg are checked by their own health
// check, whose servers coming into service wait for it: at runtime
// (untilChecked) and through a reload (startDown). It builds its set at
// its first call.
func checkedBy(cfg model.Config) func(be string) bool {
	var checked map[string]bool
	return func(be string) bool {
		if checked == nil {
			checked = make(map[string]bool)
			for _, b := range cfg.Backends {
				if b.Check.Enabled && !b.TrackNodes && b.Name != model.NodesBackend {
					checked[b.Name] = true
				}
			}
		}
		return checked[be]
	}
}
