// Package driver applies a desired model to a running HAProxy. A Driver is
// the only place that talks to HAProxy; the controller hands it the whole
// desired model on every pass and it works out, through the plan package,
// the cheapest way to get there.
package driver

import (
	"context"
	"errors"
	"time"

	"github.com/haproxy-k8s-sync/haproxy-k8s-sync/internal/model"
)

// Driver applies desired state.
type Driver interface {
	// Apply makes HAProxy run cfg. It is called with the whole desired
	// model, repeatedly; applying the same model twice is a no-op.
	Apply(ctx context.Context, cfg model.Config) (Result, error)
}

// ErrDeferred is returned when part of the change (a reload) was held back
// to coalesce a burst; the caller retries after Result.RetryAfter.
var ErrDeferred = errors.New("driver: reload deferred")

// Result tells what one Apply did, for the update log line.
type Result struct {
	Render     time.Duration
	Check      time.Duration
	Write      time.Duration
	Reload     time.Duration
	Runtime    time.Duration
	Reloaded   bool
	Reasons    []string // why it reloaded
	Ops        int      // Runtime API operations sent and applied
	OpsFailed  int      // Runtime API operations of batches that failed
	RetryAfter time.Duration
}
