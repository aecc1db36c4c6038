package driver

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
		qctx, cancel := context.WithTimeout(ctx, interval)
		info, err := d.rt.ShowInfo(qctx)
		cancel()
		if err != nil {
			if !down {
				d.log.Warn("HAProxy runtime socket unreachable", "err", err)
				d.Invalidate()
			}
			down = true
			continue
		}
		d.mu.Lock()
		changed := d.known && d.pid != "" && info["Pid"] != d.pid
		d.mu.Unlock()
		if down || changed {
			d.log.Info("HAProxy restarted or came back; re-reading its state", "pid", info["Pid"])
			d.Invalidate()
			trigger()
		}
		down = false
	}
}
