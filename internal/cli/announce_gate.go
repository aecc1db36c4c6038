package cli

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"time"

	"github.com/haproxy-k8s-sync/haproxy-k8s-sync/internal/announce"
	"github.com/haproxy-k8s-sync/haproxy-k8s-sync/internal/haproxy"
	"github.com/haproxy-k8s-sync/haproxy-k8s-sync/internal/metrics"
)

// The parts of the announcer's health gate, named in its errors (and so
// in the log line of each change of its verdict, announce.Driver.Gate).
// The third part, the link's carrier, is the layer-2 announcer's own
// ("link carrier" in its log).
var (
	errGateNotReady = errors.New("readiness")
	errGateHAProxy  = errors.New("HAProxy not answering")
)

// gateEvery is how often the health gate asks.
const gateEvery = 100 * time.Millisecond

// answerGrace: an answer of the local HAProxy slower than a gate tick is
// not a failure until HAProxy has not answered for this long (a loaded
// node); a refused or closed socket (HAProxy gone) fails at once.
const answerGrace = time.Second

// configured is the health gate's readiness beside the local HAProxy:
// the informer caches synced and a configuration applied once (inst
// nil, metrics off: not known, so not asked). It asks nothing of the
// apiserver and does not follow the last pass: HAProxy serving the last
// applied configuration is what the gate's other part checks, and a pass
// that failed (during an apiserver outage: the claims, status and
// leader election fail) is no failure of the data plane.
func configured(synced func() bool, inst *metrics.Instance) func(context.Context) error {
	return func(context.Context) error {
		if !synced() {
			return errors.New("informer caches not synced")
		}
		if inst != nil && !inst.Configured() {
			return errors.New("no configuration applied yet")
		}
		return nil
	}
}

// announceGate is the announcer's health gate: the controller ready
// and, with the local HAProxy (stats: its admin socket), that HAProxy
// answering, asked on one kept connection.
func announceGate(ready func(context.Context) error, stats string) (check func(context.Context) error, stop func()) {
	if stats == "" {
		return gate(ready, nil), func() {}
	}
	rt := haproxy.NewRuntime(stats)
	return gate(ready, func(ctx context.Context) error {
		_, err := rt.ShowInfo(ctx)
		return err
	}), func() { rt.Close() }
}

// gate is the check of announceGate: ready, then (when set) ask, each
// failure wrapped with its part. ask runs apart from the tick (asker):
// an answer slower than a tick is waited for on the same connection for
// up to answerGrace, and the host stays healthy meanwhile if HAProxy
// answered within answerGrace; a refused or closed socket fails the
// tick it is seen in.
func gate(ready, ask func(context.Context) error) func(context.Context) error {
	var answered time.Time // the last answer; zero before the first
	a := &asker{ask: ask}
	return func(ctx context.Context) error {
		if err := ready(ctx); err != nil {
			if errors.Is(err, errDraining) {
				return err
			}
			return fmt.Errorf("%w: %w", errGateNotReady, err)
		}
		if ask == nil {
			return nil
		}
		pending, err := a.result(ctx)
		now := time.Now()
		slow := !answered.IsZero() && now.Sub(answered) < answerGrace
		switch {
		case pending && slow:
			return nil // slow, not gone
		case pending:
			return fmt.Errorf("%w: asked %s ago, no answer yet", errGateHAProxy, now.Sub(a.since).Round(time.Millisecond))
		case err == nil:
			answered = now
			return nil
		case timedOut(err) && slow:
			return nil
		}
		return fmt.Errorf("%w: %w", errGateHAProxy, err)
	}
}

// asker asks one question at a time, each with answerGrace of its own
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
		actx, cancel := context.WithTimeout(context.WithoutCancel(ctx), answerGrace)
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

// startGate runs ann's health gate (announceGate) until ctx ends; the
// function returned closes its connection to HAProxy.
func startGate(ctx context.Context, ann *announce.Driver, ready func(context.Context) error, stats string, log *slog.Logger) func() {
	check, stop := announceGate(ready, stats)
	go ann.Gate(ctx, gateEvery, check, log)
	return stop
}
