package runtimeapi

import (
	"slices"

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
// tracking server's health; the node's check decides) are not held; the
// nodes' own servers (model.NodesBackend) are, with the node check: a
// node back from NotReady, or new in a free slot, whose check fails
// (kube-proxy not answering yet) would otherwise be up at once, and every
// server following it with it, until the check noticed. They carry that
// hold to their followers: HAProxy hands a tracked server's drain and
// health to the servers tracking it.
func untilChecked(ops []plan.Op, rt plan.Runtime, cfg model.Config) []plan.Op {
	checked := checkedBy(cfg)
	nodes := slices.ContainsFunc(cfg.Backends, func(b *model.Backend) bool {
		return b.Name == model.NodesBackend && b.Check.Enabled
	})
	return plan.UntilChecked(ops, rt, func(be string) bool {
		return checked(be) || (nodes && be == model.NodesBackend)
	})
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
