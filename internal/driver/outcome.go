package driver

import (
	"errors"
	"log/slog"
	"time"

	"github.com/haproxy-k8s-sync/haproxy-k8s-sync/internal/loop"
)

// Outcome is the loop's rule for a pass that applied through a driver: a
// put-off reload (ErrDeferred) comes back after res.RetryAfter, any other
// error is retried with backoff, and a pass that applied with work under
// way (res.Again) comes back after res.Again.
func Outcome(res Result, err error) loop.Outcome {
	if err == nil && res.Again > 0 {
		return loop.Outcome{Later: true, After: res.Again}
	}
	return loop.Outcome{Err: err, Later: errors.Is(err, ErrDeferred), After: res.RetryAfter}
}

// LogPass logs a pass that applied through a driver as "update": attrs
// (what the model holds, how long computing it took), the driver's
// timings, the pass's total since start, whether it reloaded and why, and
// when a put-off reload comes back or the error. At Info when the pass
// reloaded, changed something at runtime or failed; else at Debug.
func LogPass(log *slog.Logger, start time.Time, res Result, err error, attrs ...any) {
	attrs = append(attrs, "render", res.Render, "check", res.Check, "write", res.Write,
		"reload", res.Reload, "runtime", res.Runtime, "ops", res.Ops, "total", time.Since(start))
	if res.Reloaded {
		attrs = append(attrs, "reloaded", true, "reasons", res.Reasons)
	}
	switch {
	case errors.Is(err, ErrDeferred):
		attrs = append(attrs, "reload_in", res.RetryAfter)
	case err != nil:
		attrs = append(attrs, "err", err)
	case res.Again > 0:
		attrs = append(attrs, "again_in", res.Again)
	}
	if res.Reloaded || res.Ops > 0 || err != nil {
		log.Info("update", attrs...)
	} else {
		log.Debug("update", attrs...)
	}
}
