// Package haproxy is a small client for HAProxy (2.6 and newer) in master-worker mode:
// the worker's runtime API (admin stats socket), the master CLI, and
// configuration checking with `haproxy -c`.
package haproxy

import (
	"context"
	"errors"
	"fmt"
	"time"
)

// Sentinel errors. Every error returned by this package wraps one of them
// (or a context error), so callers can classify failures with errors.Is.
var (
	// ErrUnavailable: connecting to, reading from or writing to a socket failed.
	ErrUnavailable = errors.New("haproxy: socket unavailable")
	// ErrCommand: a runtime command answered with an error, or was not sendable.
	ErrCommand = errors.New("haproxy: command failed")
	// ErrReloadFailed: the master reports that the reload failed ([failed: N]
	// rose, or 2.7+ answered Success=0).
	ErrReloadFailed = errors.New("haproxy: reload failed")
	// ErrReloadInProgress: a 3.1+ master refused a reload because the
	// previous one is still loading; nothing changed, try again later.
	ErrReloadInProgress = errors.New("haproxy: another reload is still in progress")
	// ErrInvalidConfig: `haproxy -c` rejected a configuration.
	ErrInvalidConfig = errors.New("haproxy: invalid configuration")
)

// CommandError describes one runtime command whose answer reports an error.
// It wraps ErrCommand.
type CommandError struct {
	Index   int    // position of the command in the batch
	Command string // the command as sent
	Answer  string // HAProxy's answer (trimmed)
}

func (e *CommandError) Error() string {
	return fmt.Sprintf("haproxy: command %d %q failed: %s", e.Index, e.Command, e.Answer)
}

// Unwrap makes errors.Is(err, ErrCommand) true.
func (e *CommandError) Unwrap() error { return ErrCommand }

func unavailable(op string, err error) error {
	return fmt.Errorf("%w: %s: %w", ErrUnavailable, op, err)
}

// WithDefaultTimeout returns ctx bounded by d when it has no deadline of
// its own (a call must not hang on a stuck HAProxy), and ctx as is
// otherwise. The cancel function must be called either way.
func WithDefaultTimeout(ctx context.Context, d time.Duration) (context.Context, context.CancelFunc) {
	if _, ok := ctx.Deadline(); ok {
		return ctx, func() {}
	}
	return context.WithTimeout(ctx, d)
}
