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
// (its map files written, then its running maps changed), and only once
// it applied the whole model (no error, no reload held back) are the new
// elements added. So at every moment, a kill of the controller included,
// every element has its map entry, in the running HAProxy and in the file
// a restarted one reads; an entry without an element only waits for the
// next pass (no traffic reaches it). Unlike driver.Fanout, the two do not
// run side by side: they serve one data path.
type Ordered struct {
	HAProxy driver.Driver
	Kernel  *Driver
}

// Apply implements driver.Driver.
func (o Ordered) Apply(ctx context.Context, cfg model.Config) (driver.Result, error) {
	kr, kerr := o.Kernel.Remove(cfg)
	res, err := o.HAProxy.Apply(ctx, cfg)
	res.Ops += kr.Ops
	res.Runtime += kr.Runtime
	if err != nil || kerr != nil {
		return res, errors.Join(err, kerr)
	}
	kr, kerr = o.Kernel.Apply(ctx, cfg)
	res.Ops += kr.Ops
	res.Runtime += kr.Runtime
	return res, kerr
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
