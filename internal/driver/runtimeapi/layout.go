package runtimeapi

import (
	"github.com/haproxy-k8s-sync/haproxy-k8s-sync/internal/model"
	"github.com/haproxy-k8s-sync/haproxy-k8s-sync/internal/plan"
)

// The layout of server slots in force (d.layout) against a pass's: where
// cfg's servers go, which backends may need operations, and whether the
// servers are the very same.

// assign places cfg's servers into the slots in force, without resizing.
// With d.layout's own copy, it says which backends' slots it made anew
// (plan.AssignDelta).
func (d *HAProxy) assign(cfg model.Config) (model.Layout, []string, *model.LayoutDelta) {
	if d.assigned {
		return plan.AssignDelta(cfg, d.desired, d.layout, false)
	}
	layout, exhausted := plan.Assign(cfg, d.layout, false)
	return layout, exhausted, nil
}

// changed returns the part of layout that may need operations: all of it,
// or, while actual is known to match d.layout, the backends whose slots are
// not the very same slice as in d.layout (plan.AssignFrom keeps the slice of
// every backend it leaves alone; with its delta only the backends it names
// are looked at: plan.ChangedSlots). The operations are those plan.Ops
// would list for the whole layout.
func (d *HAProxy) changed(layout model.Layout, delta *model.LayoutDelta) model.Layout {
	if !d.consistent {
		return layout
	}
	return plan.ChangedSlots(layout, d.layout, delta)
}

func (d *HAProxy) sameServers(layout model.Layout) bool {
	if len(layout) != len(d.layout) {
		return false
	}
	for be, slots := range layout {
		old := d.layout[be]
		if len(old) != len(slots) {
			return false
		}
		for i := range slots {
			if slots[i] != old[i] {
				return false
			}
		}
	}
	return true
}
