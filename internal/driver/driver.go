// Package driver is the contract between the loops and the data paths: a
// Driver applies the whole desired model on every pass and works out the
// cheapest way to get there. The implementations are sibling packages, one
// per data path: runtimeapi (a local HAProxy through its Runtime API and
// master CLI), dataplaneapi (HAProxy's Data Plane API v3) and nft (UDP
// ports in the kernel's nftables). Fanout and Instances compose them.
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

// The capabilities a driver may have besides Apply, named once here; the
// loops and the compositions (Fanout, Instances) look for them.

// Invalidator is implemented by drivers that cache what HAProxy runs:
// Invalidate makes the next pass read it back.
type Invalidator interface{ Invalidate() }

// Verifier is implemented by drivers that can check what HAProxy runs
// against what they cache without holding up passes; drift reports that
// something differed (the next pass corrects it).
type Verifier interface {
	Verify(ctx context.Context) (drift bool, err error)
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
	// Again: the pass applied, and the driver has work under way that
	// goes on in later passes (a backend's servers created again phase by
	// phase: runtimeapi/renew.go); the loop comes back after Again (a
	// turn put off, no retry), so that other changes go through between
	// the phases. Zero: nothing under way.
	Again time.Duration
	// Refused: parts of the model the driver left out while it applied
	// the rest (a frontend on a port another process holds), each
	// retried by the next pass.
	Refused []Refusal
	// FDs: the open files the configuration of a reload the driver tried
	// needs, and what HAProxy may have (zero: not computed or unknown).
	FDs FDs
}

// FDs is a configuration's need of open files against HAProxy's limit.
type FDs struct {
	Need  int
	Limit int // 0: unknown
	// MaxConn: the global maxconn HAProxy computes for itself under
	// Limit when none is configured (0: configured, or Limit unknown).
	MaxConn int
}

// Refusal is a part of one Service the driver left out, and why.
type Refusal struct {
	Service string // namespace/name
	Reason  string // an Event reason, e.g. PortTaken
	Err     error
	// Served: the Service is served all the same, in part (some of its
	// servers left out): a Warning, and its LoadBalancer status is
	// written.
	Served bool
}
