package driver

import (
	"errors"

	"github.com/haproxy-k8s-sync/haproxy-k8s-sync/internal/loop"
)

// Outcome is the loop's rule for a pass that applied through a driver: a
// put-off reload (ErrDeferred) comes back after res.RetryAfter, any other
// error is retried with backoff.
func Outcome(res Result, err error) loop.Outcome {
	return loop.Outcome{Err: err, Later: errors.Is(err, ErrDeferred), After: res.RetryAfter}
}
