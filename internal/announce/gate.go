package announce

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"time"

	"github.com/haproxy-k8s-sync/haproxy-k8s-sync/internal/haproxy"
)

// The parts of the announcer's health gate, named in its errors (and so
// in the log line of each change of its verdict, Driver.Gate). The third
// part, the link's carrier, is the layer-2 announcer's own ("link
// carrier" in its log).
var (
	ErrGateNotReady = errors.New("readiness")
	ErrGateHAProxy  = errors.New("HAProxy not answering")
	// ErrDraining: the host's health gate fails because it is drained
	// (run's --announce-drain-file); passed through as it is.
	ErrDraining = errors.New("draining")
)

// GateEvery is how often the health gate asks.
const GateEvery = 100 * time.Millisecond

// AnswerGrace: an answer of the local HAProxy slower than a gate tick is
// not a failure until HAProxy has not answered for this long (a loaded
// node); a refused or closed socket (HAProxy gone) fails at once.
const AnswerGrace = time.Second

// HealthGate is the announcer's health gate: the controller ready and,
// with the local HAProxy (stats: its admin socket), that HAProxy
// answering `show info`, asked on one kept connection. stop closes that
// connection.
func HealthGate(ready func(context.Context) error, stats string) (check func(context.Context) error, stop func()) {
	if stats == "" {
		return HealthCheck(ready, nil), func() {}
	}
	rt := haproxy.NewRuntime(stats)
	return HealthCheck(ready, func(ctx context.Context) error {
		_, err := rt.ShowInfo(ctx)
		return err
	}), func() { rt.Close() }
}

// StartGate runs d's health gate (HealthGate, every GateEvery) until ctx
// ends; the function returned closes its connection to HAProxy.
func (d *Driver) StartGate(ctx context.Context, ready func(context.Context) error, stats string, log *slog.Logger) func() {
	check, stop := HealthGate(ready, stats)
	go d.Gate(ctx, GateEvery, check, log)
	return stop
}

// HealthCheck is the check of HealthGate: ready, then (when set) ask,
// each failure wrapped with its part. ask runs apart from the tick
// (asker): an answer slower than a tick is waited for on the same
// connection for up to AnswerGrace, and the host stays healthy meanwhile
// if HAProxy answered within AnswerGrace; a refused or closed socket
// fails the tick it is seen in.
func HealthCheck(ready, ask func(context.Context) error) func(context.Context) error {
	var answered time.Time // the last answer; zero before the first
	a := &asker{ask: ask}
	return func(ctx context.Context) error {
		if err := ready(ctx); err != nil {
			if errors.Is(err, ErrDraining) {
				return err
			}
			return fmt.Errorf("%w: %w", ErrGateNotReady, err)
		}
		if ask == nil {
			return nil
		}
		pending, err := a.result(ctx)
		now := time.Now()
		slow := !answered.IsZero() && now.Sub(answered) < AnswerGrace
		switch {
		case pending && slow:
			return nil // slow, not gone
		case pending:
			return fmt.Errorf("%w: asked %s ago, no answer yet", ErrGateHAProxy, now.Sub(a.since).Round(time.Millisecond))
		case err == nil:
			answered = now
			return nil
		case timedOut(err) && slow:
			return nil
		case timedOut(err) && now.Sub(a.since) >= AnswerGrace:
			// the question's own deadline: a hang, whichever of it and
			// the grace a loaded node's tick saw first
			return fmt.Errorf("%w: asked %s ago, no answer yet (%w)", ErrGateHAProxy, now.Sub(a.since).Round(time.Millisecond), err)
		}
		return fmt.Errorf("%w: %w", ErrGateHAProxy, err)
	}
}

// asker asks one question at a time, each with AnswerGrace of its own
// rather than the gate's tick: a slow answer arrives on the kept
// connection (a tick's deadline would drop it, and the next tick would
// have to connect and handshake within its 100 ms on a loaded node).
type asker struct {
	ask   func(context.Context) error
	done  chan error // the question in flight's answer; nil when none
	since time.Time  // when it was asked
}

// result asks (unless a question is in flight) and waits for the answer
// within ctx: pending when ctx ended first (the question stays in flight
// for the next call), else the answer's error.
func (a *asker) result(ctx context.Context) (pending bool, err error) {
	if a.done == nil {
		done := make(chan error, 1)
		a.done, a.since = done, time.Now()
		actx, cancel := context.WithTimeout(context.WithoutCancel(ctx), AnswerGrace)
		go func() {
			defer cancel()
			done <- a.ask(actx)
		}()
	}
	select {
	case err := <-a.done:
		a.done = nil
		return false, err
	case <-ctx.Done():
		return true, nil
	}
}

// timedOut: err is a deadline (the question's own, or a socket's: "i/o
// timeout"), not HAProxy gone.
func timedOut(err error) bool {
	return errors.Is(err, os.ErrDeadlineExceeded) || errors.Is(err, context.DeadlineExceeded)
}
