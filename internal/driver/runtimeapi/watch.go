package runtimeapi

import (
	"context"
	"time"
)

// Watch notices HAProxy restarting or disappearing behind the controller's
// back (a worker PID it did not start, or a dead socket) and then forgets
// the running state and calls trigger, so the next pass reads it back and
// converges. It polls `show info` every interval until ctx ends.
func (d *HAProxy) Watch(ctx context.Context, interval time.Duration, trigger func()) {
	t := time.NewTicker(interval)
	defer t.Stop()
	down := false
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
		d.mu.Lock()
		epoch := d.pidEpoch
		d.mu.Unlock()
		qctx, cancel := context.WithTimeout(ctx, interval)
		info, err := d.rt.ShowInfo(qctx)
		cancel()
		down = d.observe(epoch, info["Pid"], err, down, trigger)
	}
}

// observe judges one `show info` answer (pid, or err), asked when the
// driver's pid epoch was epoch, and reports whether HAProxy is now down.
// An answer from before a reload of the driver's own, which changed the
// worker meanwhile, says nothing about a restart and is ignored.
func (d *HAProxy) observe(epoch uint64, pid string, err error, down bool, trigger func()) bool {
	d.mu.Lock()
	stale := d.pidEpoch != epoch || d.aside != nil // a reload aside changes the worker (aside.go)
	changed := d.known && d.pid != "" && pid != d.pid
	d.mu.Unlock()
	if stale {
		return down
	}
	if err != nil {
		if !down {
			d.log.Warn("HAProxy runtime socket unreachable", "err", err)
			d.Invalidate()
		}
		return true
	}
	if down || changed {
		d.log.Info("HAProxy restarted or came back; re-reading its state", "pid", pid)
		d.Invalidate()
		trigger()
	}
	return false
}
