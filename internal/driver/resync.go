package driver

import (
	"context"
	"log/slog"
	"time"
)

// Resync runs until ctx ends: every period it has drv check HAProxy's
// state (a Verifier does it alongside passes; otherwise an Invalidator
// forgets it, and the next pass reads it back), calls drift when the check
// found any, and then trigger, whatever the check found: the pass that
// follows re-applies the desired state, which corrects any drift and costs
// little when nothing changed. A ticker that fires during a long check
// skips its missed ticks. A period <= 0 turns it off.
func Resync(ctx context.Context, drv Driver, period time.Duration, log *slog.Logger, drift, trigger func()) {
	if period <= 0 {
		return
	}
	t := time.NewTicker(period)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
			verify(ctx, drv, period, log, drift)
			trigger()
		}
	}
}

func verify(ctx context.Context, drv Driver, timeout time.Duration, log *slog.Logger, drift func()) {
	vctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	start := time.Now()
	found, err := Check(vctx, drv)
	if err != nil {
		log.Warn("could not verify HAProxy's state; re-applying anyway", "err", err)
		return
	}
	if _, ok := drv.(Verifier); ok {
		log.Debug("verified HAProxy's state", "drift", found, "took", time.Since(start))
	}
	if found {
		drift()
	}
}

// Check is the one rule of a check of what a driver applied: a Verifier
// verifies (drift: something differed; the next pass corrects it); an
// Invalidator, which cannot, forgets what it caches, so the next pass
// reads it back; any other driver has nothing to check.
func Check(ctx context.Context, d Driver) (drift bool, err error) {
	switch v := d.(type) {
	case Verifier:
		return v.Verify(ctx)
	case Invalidator:
		v.Invalidate()
	}
	return false, nil
}
