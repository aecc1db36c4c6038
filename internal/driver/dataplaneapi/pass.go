package dataplaneapi

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"
	"time"

	"github.com/haproxy-k8s-sync/haproxy-k8s-sync/internal/dataplane"
	"github.com/haproxy-k8s-sync/haproxy-k8s-sync/internal/driver"
	"github.com/haproxy-k8s-sync/haproxy-k8s-sync/internal/model"
	"github.com/haproxy-k8s-sync/haproxy-k8s-sync/internal/plan"
)

// apply is one pass: read what changed, work out the target, and get
// there through the runtime endpoints, or through one transaction when
// the configuration's structure changes.
func (d *Driver) apply(ctx context.Context, cfg model.Config, p *Pass) (driver.Result, []string, error) {
	t := time.Now()
	have, err := d.current(ctx)
	if err != nil {
		d.forget()
		return driver.Result{}, nil, err
	}
	p.Read = time.Since(t)
	sel := d.selected(cfg)
	if d.opts.Seed != "" {
		if len(sel.Backends) == 0 {
			// The Service is gone or has no TCP port: keep the servers.
			return driver.Result{}, nil, nil
		}
		if have.backends[d.opts.Seed] == nil && !d.opts.CreateBackend {
			if !d.missing && d.opts.OnBackendMissing != nil {
				d.opts.OnBackendMissing(d.opts.Seed)
			}
			d.missing = true
			return driver.Result{}, nil, fmt.Errorf("%w: backend %q (create it in haproxy.cfg, or allow the controller to create it)", ErrBackendMissing, d.opts.Seed)
		}
		d.missing = false
		sel = d.refuseRestricted(cfg, sel)
	}
	if err := d.syncACLFiles(ctx, sel, p); err != nil {
		return driver.Result{}, nil, err
	}
	var clean map[string]bool
	if d.appliedOn != nil && d.appliedOn == have && d.wanted != nil {
		clean = cleanSections(sel, d.applied)
	}
	d.appliedOn = nil // until this pass succeeds
	// The slots as the last pass left them (the configuration may lag
	// behind what runs), or as the configuration has them.
	var known model.Layout
	if d.wanted != nil {
		known = d.layout
	}
	unclean(clean, sel, known)
	d.uncleanOwed(clean)
	prev := layoutFrom(have, sel, known)
	d.holdNodes(prev) // a deleted node's slot, while servers following it owe their maintenance
	layout, exhausted := plan.Assign(sel, prev, false)
	exhausted = append(exhausted, staleTracks(sel, layout)...)
	want, drain := d.target(have, d.wanted, sel, layout, clean, false)
	changes := diff(have, want, clean, d.opts.Seed == "")
	if structural(changes) || len(exhausted) > 0 {
		// A reload happens anyway: the backends that outgrew their
		// slots get their size anew, and so do those with more than
		// twice the slots they need; no other backend is rewritten (each
		// write costs the API a rewrite of haproxy.cfg).
		clean = nil
		layout = resized(sel, prev, layout, exhausted)
		want, drain = d.target(have, nil, sel, layout, nil, true)
		changes = diff(have, want, nil, d.opts.Seed == "")
	}
	if structural(changes) {
		reasons := reasonsOf(changes)
		err := d.restructure(ctx, have, want, drain, changes, p)
		if err == nil {
			d.rangesReloaded(ctx)
		}
		return driver.Result{}, reasons, err
	}
	t = time.Now()
	err = d.runtime(ctx, want, drain, clean, p)
	p.Runtime += time.Since(t)
	if err == nil {
		err = d.pushRanges(ctx, sel, p)
	}
	if err != nil {
		return driver.Result{}, nil, err
	}
	d.markDirty(have, want, clean)
	d.wanted = want
	d.applied, d.layout, d.appliedOn = sel, layout, d.view
	return driver.Result{}, nil, nil
}

func reasonsOf(changes []change) []string {
	var reasons []string
	for _, c := range changes {
		if !c.live && len(reasons) < 20 {
			reasons = append(reasons, c.what)
		}
	}
	return reasons
}

// current returns the view of the API's configuration the pass works
// from: the one the driver keeps while the version is the one its own
// writes left, else read again. When someone else wrote, or (checked at a
// resync) HAProxy's worker changed, what HAProxy runs is read again too.
func (d *Driver) current(ctx context.Context) (*state, error) {
	v, err := d.c.Version(ctx)
	if err != nil {
		return nil, err
	}
	ours := v == d.known || (d.inflightDone != nil && v == d.known+1)
	if !ours {
		d.view, d.wanted, d.pid = nil, nil, 0
		d.resetRuntime()
	}
	if d.verify {
		d.verify = false
		pid, err := d.c.WorkerPID(ctx)
		if err != nil {
			return nil, err
		}
		if pid != d.pid {
			// HAProxy reloaded or restarted: what it runs is to be read
			// again, for every backend (none is clean).
			d.resetRuntime()
			d.pid, d.appliedOn = pid, nil
		}
	}
	if d.view == nil {
		// The persister's write under way, if any, must not overtake the read.
		d.waitPersist("")
		if v, err = d.c.Version(ctx); err != nil {
			return nil, err
		}
		view, err := d.read(ctx, v)
		if err != nil {
			return nil, err
		}
		d.view, d.known = view, v
	}
	return d.view, nil
}

// runtime makes HAProxy run want through the runtime endpoints: the
// backends not in clean, whose slots differ from what runs.
func (d *Driver) runtime(ctx context.Context, want *state, drain map[string]bool, clean map[string]bool, p *Pass) error {
	read, err := d.readRuntime(ctx, want)
	if err != nil {
		return err
	}
	d.suspectOwed(want, read)
	if d.pid == 0 {
		pid, err := d.c.WorkerPID(ctx)
		if err != nil {
			return err
		}
		d.pid = pid
	}
	ops := d.runtimeOps(want, drain, clean)
	if len(ops) > 0 {
		d.lastChange = d.now()
	}
	t := time.Now()
	for _, op := range ops {
		d.waitPersist(op.key()) // its write would set the slot as it was
	}
	p.Waited += time.Since(t)
	return d.applyRuntime(ctx, ops, p)
}

// restructure makes the changes in one transaction, with every server
// change not written yet, and waits for the reload: HAProxy then runs
// want's configuration, and the drains are set again at runtime.
func (d *Driver) restructure(ctx context.Context, have, want *state, drain map[string]bool, changes []change, p *Pass) error {
	t := time.Now()
	d.waitPersist("")
	p.Waited += time.Since(t)
	if d.view != have {
		// The persister found the API changed meanwhile: start afresh.
		return errors.New("dataplaneapi: the API's configuration changed during the pass; retrying")
	}
	raw, err := d.commitChanges(ctx, have, want, changes, p)
	if err != nil {
		d.forget()
		if errors.Is(err, dataplane.ErrReloadFailed) {
			err = d.repair(ctx, have, err, p)
		}
		return err
	}
	d.view, d.wanted, d.known = nil, nil, have.version+1
	if raw {
		// The API holds our sections exactly as rendered from want (they
		// read back as written: the contract tests check it), so the next
		// pass needs no read of them all (0.35 s and more at 1,000).
		d.view = &state{version: have.version + 1, backends: want.backends, frontends: want.frontends}
		d.wanted = want
	}
	clear(d.dirty)
	d.runtimeFromConfig(want)
	pid, err := d.c.WorkerPID(ctx)
	if err != nil {
		return err
	}
	d.pid = pid
	t = time.Now()
	err = d.applyRuntime(ctx, d.runtimeOps(want, drain, nil), p)
	p.Runtime += time.Since(t)
	return err
}

// resized is layout with the backends in exhausted, and those with more
// than twice the slots they need, sized anew (plan.Assign with resize).
// When servers follow their node, the backends that are new or hold a
// server in a slot that follows no node are too: a reload binds their
// slots to their nodes' (the model.NodesBackend keeps its slots unless it
// is itself resized).
func resized(cfg model.Config, prev, layout model.Layout, exhausted []string) model.Layout {
	resize := make(map[string]bool, len(exhausted))
	for _, name := range exhausted {
		resize[name] = true
	}
	var sub model.Config
	nodes := false
	for _, b := range cfg.Backends {
		if resize[b.Name] || len(prev[b.Name]) > 2*plan.SlotsFor(len(b.Servers)) ||
			(b.TrackNodes && (prev[b.Name] == nil || hasLoose(layout[b.Name]))) {
			sub.Backends = append(sub.Backends, b)
			nodes = nodes || b.Name == model.NodesBackend
		}
	}
	if len(sub.Backends) == 0 {
		return layout
	}
	sub, from := bindNodes(cfg, sub, prev, layout)
	next, _ := plan.Assign(sub, from, true)
	out := maps.Clone(layout)
	maps.Copy(out, next)
	if !nodes && cfg.Nodes() != nil {
		out[model.NodesBackend] = layout[model.NodesBackend]
	}
	if stale := staleTracks(cfg, out); len(stale) > 0 && nodes && !slices.Contains(exhausted, stale[0]) {
		// _nodes shed slots some free slots were bound to: unbind them
		// (once: they are then sized anew against the new _nodes).
		return resized(cfg, prev, out, append(slices.Clone(exhausted), stale...))
	}
	return out
}

// hasLoose reports whether slots hold a server in a slot that follows no
// node.
func hasLoose(slots []model.Slot) bool {
	for _, sl := range slots {
		if sl.Used && sl.Track == 0 {
			return true
		}
	}
	return false
}

// refuseRestricted is seed mode's answer to source ranges
// (spec.loadBalancerSourceRanges): the clients reach the operator's
// frontend, which the driver does not own and cannot restrict, so the
// Service is refused (its backend keeps no server in service) rather
// than served to every client, with OnRangesRefused (a Warning Event).
func (d *Driver) refuseRestricted(cfg, sel model.Config) model.Config {
	svc := sel.Backends[0].Service
	restricted := false
	for _, f := range cfg.Frontends {
		if f.Service == svc && f.Restricted() {
			restricted = true
		}
	}
	if !restricted {
		d.refusing = false
		return sel
	}
	if !d.refusing {
		d.log.Error("the Service has source ranges, which the operator's frontend cannot be made to enforce: refused (no server in service)",
			"service", svc, "backend", d.opts.Seed)
		if d.opts.OnRangesRefused != nil {
			d.opts.OnRangesRefused(svc)
		}
	}
	d.refusing = true
	b := *sel.Backends[0]
	b.Servers = nil
	return model.Config{Backends: []*model.Backend{&b}}
}
