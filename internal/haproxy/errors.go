// Package haproxy is a small client for HAProxy (2.6 and newer) in master-worker mode:
// the worker's runtime API (admin stats socket), the master CLI, and
// configuration checking with `haproxy -c`.
package haproxy

import (
	"context"
	"errors"
	"fmt"
	"strings"
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

// ReloadError is a reload the master reports failed; it wraps
// ErrReloadFailed. Reason is HAProxy's own word for it, its [ALERT]
// lines (AlertLines), where it can be had: HAProxy 2.7 and later answer
// the master CLI's reload with the startup logs; 2.6 answers nothing and
// writes them only to the master's output (its container's log, its
// unit's journal, none at all with `quiet`), which the controller does
// not read: the runtimeapi driver then fills Reason from Explain (`haproxy
// -c -V` of the file that failed) or the binds the file adds; left empty
// (no haproxy binary to run), the message says where to look.
//
// Answered: the master said so itself (2.7+ `Success=0`, Reason from its
// startup logs); otherwise `show proc`'s counters did (Before, After,
// Failed).
type ReloadError struct {
	Before, After int // the master's reload counter before and after
	Failed        int // its consecutive failed reloads
	Answered      bool
	Reason        string
}

func (e *ReloadError) Error() string {
	if e.Answered {
		return "haproxy: reload failed: master answered Success=0: " + e.Reason
	}
	head := fmt.Sprintf("haproxy: reload failed (master reports %d failed reload(s), reloads %d -> %d)", e.Failed, e.Before, e.After)
	if e.Reason != "" {
		return head + ": " + e.Reason
	}
	return head + "; HAProxy says why only in the master's output (its [ALERT] lines in the container's log or the unit's journal): " +
		"haproxy -c does not check what only a start does, such as the open-file limit or a bind"
}

// Unwrap makes errors.Is(err, ErrReloadFailed) true.
func (e *ReloadError) Unwrap() error { return ErrReloadFailed }

// AlertLines returns the [ALERT] lines of HAProxy's output, without their
// prefix and process id, joined by "; " ("" when there are none).
func AlertLines(out string) string {
	var alerts []string
	for line := range strings.Lines(out) {
		if a, ok := alertText(line); ok {
			alerts = append(alerts, a)
		}
	}
	return strings.Join(alerts, "; ")
}

// alertText is the message of one [ALERT] line of HAProxy's output (its
// log or a 2.7+ reload's startup logs), without "[ALERT] (PID) :"; false
// for any other line, or an alert with no text.
func alertText(line string) (string, bool) {
	_, rest, ok := strings.Cut(line, "[ALERT]")
	if !ok {
		return "", false
	}
	rest = strings.TrimSpace(rest)
	if strings.HasPrefix(rest, "(") { // "(12345) : "
		if _, after, ok := strings.Cut(rest, ") :"); ok {
			rest = strings.TrimSpace(after)
		}
	}
	return rest, rest != ""
}

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
