package runtimeapi

import (
	"context"
	"github.com/haproxy-k8s-sync/haproxy-k8s-sync/internal/driver"
	"time"

	"github.com/haproxy-k8s-sync/haproxy-k8s-sync/internal/model"
	"github.com/haproxy-k8s-sync/haproxy-k8s-sync/internal/plan"
)

// applyServers is Apply for a config that differs from the one last
// applied only in the servers of the backends cfg.Changes lists (the
// desired package's passes after endpoint and node changes): it assigns
// and operates on those backends alone, instead of comparing tens of
// thousands of backends and hashing the structure again. It reports false,
// having changed nothing, when cfg does not qualify; Apply then takes the
// general path, which gives the same outcome. While the driver owes a
// reload that no model difference shows (owesReload: changed render
// options, a structure hash in doubt, client files left stale) a pass
// takes the general path too, which reloads for it: a pass that changed
// no server (an empty cfg.Changes, as the stats credentials' pass is)
// would apply nothing here.
func (d *HAProxy) applyServers(ctx context.Context, cfg model.Config, res *driver.Result) (bool, error) {
	if d.opts.Mode != ModeHybrid || !d.known || !d.assigned || !d.consistent || d.owesReload() != "" ||
		!model.SameSlice(cfg.Frontends, d.desired.Frontends) {
		return false, nil
	}
	t := time.Now()
	var changed model.Layout
	switch {
	case cfg.Changes != nil:
		var ok bool
		if d.loose == nil {
			d.loose = plan.LooseOf(d.desired, d.layout)
		}
		if changed, ok = plan.AssignChanged(cfg, d.desired, d.layout, d.loose); !ok {
			return false, nil
		}
	case model.SameSlice(cfg.Backends, d.desired.Backends) && len(d.unsent) > 0:
		changed = model.Layout{} // nothing new: only what a preempted pass left
	default:
		return false, nil
	}
	// Backends a preempted pass left behind are planned again too.
	for name := range d.unsent {
		if _, ok := changed[name]; !ok {
			if slots, ok := d.layout[name]; ok {
				changed[name] = slots
			}
		}
	}
	res.Render = time.Since(t)
	ops, missing := d.ops(changed, cfg)
	if len(missing) > 0 {
		return false, nil // the general path reports it
	}
	d.leftBehindFirst(ops)
	unsent, err := d.execOpsPreemptible(ctx, ops, res)
	if err != nil {
		return true, err
	}
	d.markUnsent(unsent)
	if d.loose != nil {
		d.loose.Update(cfg, changed)
	}
	// The structure (frontends, backend settings, slot counts) is the one
	// running: the hash stays.
	cfg.Changes = nil // not needed any more; it holds the previous model's arrays
	// d.layout is updated in place (a copy of 10,000 entries per pass was
	// the driver's largest allocation): it is read only under d.mu, and
	// a flush rendering it outside the lock has it copied first.
	d.ownLayout()
	for name, slots := range changed {
		d.layout[name] = slots
	}
	d.running, d.desired = cfg, cfg
	d.hashes.Rebase(cfg, d.layout, d.hash)
	d.gen++
	if d.opts.onServersOnly != nil {
		d.opts.onServersOnly()
	}
	d.schedulePersist()
	return true, d.renewServers(ctx, cfg, d.certs.takeRenew(), res) // renewals under way go on (renew.go)
}
