package tproxy

import (
	"context"
	"errors"

	"github.com/haproxy-k8s-sync/haproxy-k8s-sync/internal/driver"
	"github.com/haproxy-k8s-sync/haproxy-k8s-sync/internal/model"
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
// model; when it held a reload back (driver.ErrDeferred: the pool's
// growth, say, waiting for a quiet moment) those of the part it serves
// already (Serving: a new Service in a free spare), so that nothing it
// serves waits for that reload; none after any other error. A pass that
// serves its part first and then reloads in the same Apply (the pool's
// growth let through by the reload gate) adds that part's elements
// between the two (driver.WithServed). So at every
// moment, a kill of the controller included, every element has its map
// entry, in the running HAProxy and in the file a restarted one reads; an
// entry without an element only waits for the next pass (no traffic
// reaches it). Unlike driver.Fanout, the two do not run side by side:
// they serve one data path.
type Ordered struct {
	HAProxy driver.Driver
	Kernel  *Driver
}

// Serving is what HAProxy's driver tells Ordered after a pass whose reload
// it held back: the model the running HAProxy serves, its listener's maps
// included (as HAProxy names it: the binds are the model's), and whether
// that is known.
type Serving interface {
	Serving() (model.Config, bool)
}

// Apply implements driver.Driver.
func (o Ordered) Apply(ctx context.Context, cfg model.Config) (driver.Result, error) {
	kr, kerr := o.Kernel.Remove(cfg)
	// A pass that serves part of itself before a reload (the pool's
	// serve-first apply, then its growth) tells what is served: its
	// elements go in then, not after the reload.
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
	res, err := o.HAProxy.Apply(ctx, cfg)
	res.Ops += kr.Ops + early.Ops
	res.Runtime += kr.Runtime + early.Runtime
	if kerr = errors.Join(kerr, eerr); kerr != nil {
		return res, errors.Join(err, kerr)
	}
	switch s, ok := o.HAProxy.(Serving); {
	case err == nil:
		kr, kerr = o.Kernel.Apply(ctx, cfg)
	case errors.Is(err, driver.ErrDeferred) && ok:
		served, known := s.Serving()
		if !known {
			return res, err
		}
		kr, kerr = o.Kernel.ApplyServed(cfg, served)
	default:
		return res, err
	}
	res.Ops += kr.Ops
	res.Runtime += kr.Runtime
	if kerr != nil {
		return res, errors.Join(err, kerr)
	}
	return res, err
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
