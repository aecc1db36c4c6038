package driver

import (
	"context"
	"errors"
	"sync"

	"github.com/haproxy-k8s-sync/haproxy-k8s-sync/internal/model"
)

var (
	_ Driver   = Fanout(nil)
	_ Verifier = Fanout(nil)
)

// Fanout hands the whole model to several drivers, one per data path
// (HAProxy for TCP, the kernel for UDP), each applying its own part. The
// first driver's Result leads (its timings and reload); the others add
// their operations, time and refusals. The drivers run side by side (one data path
// never waits for another's reload), each one even when another fails;
// the errors are joined (errors.Is still finds ErrDeferred). The model is
// only read.
type Fanout []Driver

// Apply applies cfg with every driver.
func (f Fanout) Apply(ctx context.Context, cfg model.Config) (Result, error) {
	results := make([]Result, len(f))
	errs := make([]error, len(f))
	var wg sync.WaitGroup
	for i, d := range f {
		wg.Go(func() { results[i], errs[i] = d.Apply(ctx, cfg) })
	}
	wg.Wait()
	var res Result
	for i, r := range results {
		if i == 0 {
			res = r
			continue
		}
		res.Ops += r.Ops
		res.Runtime += r.Runtime
		res.Refused = append(res.Refused, r.Refused...)
		if r.Again > 0 && (res.Again == 0 || r.Again < res.Again) {
			res.Again = r.Again // the soonest any driver asks for
		}
	}
	return res, errors.Join(errs...)
}

// Verify verifies the drivers that can (drift if any found some), and
// has the drivers that cache what they applied without verifying forget
// it.
func (f Fanout) Verify(ctx context.Context) (bool, error) {
	drift := false
	var errs []error
	for _, d := range f {
		dr, err := Check(ctx, d)
		drift = drift || dr
		if err != nil {
			errs = append(errs, err)
		}
	}
	return drift, errors.Join(errs...)
}
