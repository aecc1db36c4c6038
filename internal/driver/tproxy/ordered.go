package tproxy

import (
	"context"
	"errors"

	"github.com/haproxy-k8s-sync/haproxy-k8s-sync/internal/driver"
	"github.com/haproxy-k8s-sync/haproxy-k8s-sync/internal/model"
	"github.com/haproxy-k8s-sync/haproxy-k8s-sync/internal/render"
)

var (
	_ driver.Driver      = Ordered{}
	_ driver.Verifier    = Ordered{}
	_ driver.Invalidator = Ordered{}
)

// Ordered applies a model to HAProxy's driver and to the kernel's sets in
// the one order that never sends a connection to the listener for a key
// its map lacks: elements that go are deleted first, then HAProxy applies
// (its map files written, then its running maps changed), and only then
// are the new elements added: all of them when HAProxy applied the whole
// model; those of the part it serves already when it tells so through
// the context (driver.WithServed): part-way through a pass that serves
// its part first and then reloads in the same Apply (the pool's growth
// let through by the reload gate), between the two; and as it returns a
// pass whose reload it held back (driver.ErrDeferred: the pool's growth,
// say, waiting for a quiet moment; a new Service in a free spare is
// served), so that nothing it serves waits for that reload; none after
// any other error, nor after a deferral whose served part it does not
// know. A pass that applied the whole model and has only its own
// bookkeeping left (the pool's file) adds every new element when it
// tells so (driver.WithApplied), not after that. So at every
// moment, a kill of the controller included, every element has its map
// entry, in the running HAProxy and in the file a restarted one reads; an
// entry without an element only waits for the next pass (no traffic
// reaches it). Unlike driver.Fanout, the two do not run side by side:
// they serve one data path.
//
// With Holds, the fixed HTTPS listener's claims are first-come
// (render.HTTPSListened): each model is handed to both with the names the
// listener served after the last pass that ran (model.Config.HTTPSHeld),
// so HAProxy's maps and crt-list and the kernel's sets read the same
// claims, and a pass that ran (or served with its reload held back)
// keeps what it has the listener serve for the next.
type Ordered struct {
	HAProxy driver.Driver
	Kernel  *Driver
	Holds   *render.HTTPSHolds // nil: name order, as a model without HTTPSHeld
}

// Apply implements driver.Driver.
func (o Ordered) Apply(ctx context.Context, cfg model.Config) (driver.Result, error) {
	cfg = o.Kernel.opts.Render.ClaimHTTPS(o.Holds.Hold(cfg)) // the claims once, for both
	res, err := o.apply(ctx, cfg)
	if err == nil || errors.Is(err, driver.ErrDeferred) {
		o.Holds.Took(cfg, o.Kernel.opts.Render)
	}
	return res, err
}

func (o Ordered) apply(ctx context.Context, cfg model.Config) (driver.Result, error) {
	kr, kerr := o.Kernel.Remove(ctx, cfg)
	// What HAProxy tells it serves before the whole pass is (a part
	// served before a reload in the same pass, or held back with the
	// reload): its elements go in then, not after the reload.
	var early driver.Result
	var eerr error
	ctx = driver.WithServed(ctx, func(served model.Config) {
		if eerr == nil {
			r, err := o.Kernel.ApplyServed(cfg, served)
			early.Ops += r.Ops
			early.Runtime += r.Runtime
			eerr = err
		}
	})
	// A pass that tells when the whole model runs, before the rest of
	// its work (the pool's file), has the new elements added then.
	var applied *driver.Result
	var aerr error
	ctx = driver.WithApplied(ctx, func() {
		if eerr == nil && applied == nil {
			r, err := o.Kernel.Apply(ctx, cfg)
			applied, aerr = &r, err
		}
	})
	res, err := o.HAProxy.Apply(ctx, cfg)
	res.Ops += kr.Ops + early.Ops
	res.Runtime += kr.Runtime + early.Runtime
	if kerr = errors.Join(kerr, eerr); kerr != nil {
		return res, errors.Join(err, kerr)
	}
	if err != nil {
		return res, err // deferred: what is served has its elements (above)
	}
	if applied != nil {
		kr, kerr = *applied, aerr
	} else {
		kr, kerr = o.Kernel.Apply(ctx, cfg)
	}
	res.Ops += kr.Ops
	res.Runtime += kr.Runtime
	if kerr != nil {
		return res, kerr
	}
	return res, nil
}

// Verify implements driver.Verifier: HAProxy's verification, and the
// kernel's table read back by the next pass.
func (o Ordered) Verify(ctx context.Context) (bool, error) {
	o.Kernel.Invalidate()
	return driver.Check(ctx, o.HAProxy)
}

// Invalidate implements driver.Invalidator.
func (o Ordered) Invalidate() {
	o.Kernel.Invalidate()
	if i, ok := o.HAProxy.(driver.Invalidator); ok {
		i.Invalidate()
	}
}
