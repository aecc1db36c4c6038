package source

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"sync/atomic"
	"time"

	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/cache"
)

// After an apiserver outage, client-go's reflectors come back on their
// own, but each only after its own exponential backoff (0.8 s doubling up
// to 30 s, jitter 1.0: up to a minute), which shared informers do not let
// us configure: after a 30 s outage the controller went on serving the
// old state for 0.7-47 s (docs/reliability.md). So each source (Source,
// Gateway) watches for the outage itself: a request of the client that
// fails at the transport (connection refused, reset, timeout) wakes it,
// it asks /readyz every ProbeInterval while the apiserver does not
// answer, and once it answers again (after at least one failed probe: a
// single failed request is client-go's to retry) it starts a fresh
// generation of the informers, waits until their caches have synced (a
// full list), and swaps them in for the old ones, which stop. What
// changed meanwhile is then seen within a probe interval plus one list.
// The watching and the swap are the same for both sources (relister,
// relistInto); each only says how a generation is built.

// ProbeInterval is how often /readyz is asked while the apiserver does
// not answer.
const ProbeInterval = 250 * time.Millisecond

// Outage sees requests fail at the transport. Its WrapTransport goes into
// the rest.Config of every client of the apiserver (rest.Config.Wrap),
// before the clients are made.
type Outage struct {
	failed chan struct{}
}

// NewOutage returns an Outage that has seen nothing yet.
func NewOutage() *Outage { return &Outage{failed: make(chan struct{}, 1)} }

// WrapTransport wraps a client's transport: every request that fails
// without an answer (other than by its own cancellation) is reported.
func (o *Outage) WrapTransport(rt http.RoundTripper) http.RoundTripper {
	return &outageTransport{rt: rt, o: o}
}

type outageTransport struct {
	rt http.RoundTripper
	o  *Outage
}

func (t *outageTransport) RoundTrip(req *http.Request) (*http.Response, error) {
	resp, err := t.rt.RoundTrip(req)
	if err != nil && req.Context().Err() == nil {
		select {
		case t.o.failed <- struct{}{}:
		default:
		}
	}
	return resp, err
}

// WrappedRoundTripper lets client-go see through the wrapper.
func (t *outageTransport) WrappedRoundTripper() http.RoundTripper { return t.rt }

// relister is the part of a source that relists after an outage: set by
// RelistAfterOutage, run by Start.
type relister struct {
	outage *Outage
	log    *slog.Logger
	probe  rest.Interface // asks /readyz
	relist func(ctx context.Context, timeout time.Duration) error
}

// run runs until ctx ends: each outage seen ends in one relist once the
// apiserver is back.
func (r *relister) run(ctx context.Context, timeout time.Duration) {
	for {
		select {
		case <-ctx.Done():
			return
		case <-r.outage.failed:
		}
		down, err := r.waitReady(ctx)
		if err != nil {
			return // ctx ended
		}
		// Probes that failed meanwhile reported themselves: the outage
		// they saw is over.
		select {
		case <-r.outage.failed:
		default:
		}
		if down == 0 {
			continue
		}
		r.log.Info("apiserver answers again: relisting", "unreachable", down.Round(time.Millisecond))
		begin := time.Now()
		if err := r.relist(ctx, timeout); err != nil {
			if ctx.Err() != nil {
				return
			}
			r.log.Warn("relist after the apiserver outage failed; the informers retry on their own", "err", err)
			continue
		}
		r.log.Info("relisted after the apiserver outage", "took", time.Since(begin).Round(time.Millisecond))
	}
}

// waitReady asks /readyz until it answers, and reports for how long it
// did not (0: it answered at once).
func (r *relister) waitReady(ctx context.Context) (time.Duration, error) {
	begin := time.Now()
	for i := 0; ; i++ {
		if err := r.ready(ctx); err == nil {
			if i == 0 {
				return 0, nil
			}
			return time.Since(begin), nil
		} else if i == 0 {
			r.log.Warn("apiserver unreachable; serving what is applied until it answers", "err", err)
		}
		select {
		case <-ctx.Done():
			return 0, ctx.Err()
		case <-time.After(ProbeInterval):
		}
	}
}

// ready asks the apiserver's /readyz (allowed to every client by the
// default system:public-info-viewer role).
func (r *relister) ready(ctx context.Context) error {
	ctx, cancel := context.WithTimeout(ctx, 2*time.Second)
	defer cancel()
	body, err := r.probe.Get().AbsPath("/readyz").DoRaw(ctx)
	if err != nil {
		return err
	}
	if string(body) != "ok" {
		return fmt.Errorf("/readyz: %q", body)
	}
	return nil
}

// WatchOutages runs until ctx ends: each outage o sees (a request
// failing at its transport) ends, once the apiserver answers /readyz
// (asked through probe) again, in one call of relist. For a mode that
// keeps its informers its own way (the apiserver mode); the Source and
// the Gateway source take RelistAfterOutage.
func WatchOutages(ctx context.Context, o *Outage, log *slog.Logger, probe rest.Interface, relist func(context.Context) error) {
	newRelister(o, log, probe, func(ctx context.Context, _ time.Duration) error { return relist(ctx) }).run(ctx, 0)
}

// generation is one generation of a source's informers, started and
// stopped together.
type generation interface {
	register(h handler) error
	start(ctx context.Context)
	stop()
	synced() bool
}

// relistInto starts a new generation of the informers (build), waits
// until it has synced (at most timeout) and puts it in place of the one
// in cur, which stops; then every handler runs once (a pass on the new
// caches). If the new one does not sync in time it is stopped and the
// old one stays.
func relistInto[S any, G interface {
	*S
	generation
}](ctx context.Context, timeout time.Duration, cur *atomic.Pointer[S], build func() G, handlers []handler) error {
	next := build()
	for _, h := range handlers {
		if err := next.register(h); err != nil {
			return err
		}
	}
	next.start(ctx)
	wctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	if !WaitSynced(wctx, next.synced) {
		next.stop()
		return errors.New("the new informers did not sync within " + timeout.String())
	}
	G(cur.Swap((*S)(next))).stop()
	for _, h := range handlers {
		h.change()
	}
	return nil
}

// registerAll adds a handler to each informer running h.change on every
// add, delete and Relevant update, h.quiet (if any) on the other updates
// with the updated object.
func registerAll(h handler, infs []cache.SharedIndexInformer) error {
	funcs := cache.ResourceEventHandlerFuncs{
		AddFunc:    func(any) { h.change() },
		UpdateFunc: h.updated,
		DeleteFunc: func(any) { h.change() },
	}
	for _, inf := range infs {
		if _, err := inf.AddEventHandler(funcs); err != nil {
			return err
		}
	}
	return nil
}

// updated runs h.change on a Relevant update, else h.quiet (if any) with
// the updated object.
func (h handler) updated(old, new any) {
	switch {
	case Relevant(old, new):
		h.change()
	case h.quiet != nil:
		h.quiet(new)
	}
}

// syncedAll reports whether every informer has synced.
func syncedAll(infs []cache.SharedIndexInformer) bool {
	for _, inf := range infs {
		if !inf.HasSynced() {
			return false
		}
	}
	return true
}

// RelistAfterOutage makes the Source relist (a fresh generation of the
// informers) as soon as the apiserver answers /readyz again after
// requests failed at o's transport. Call before Start.
func (s *Source) RelistAfterOutage(o *Outage, log *slog.Logger) {
	s.relistAfterOutage(o, log, s.client.Discovery().RESTClient())
}

// RelistAfterOutage makes the Gateway source relist as the Source does
// (Source.RelistAfterOutage). Call before Start.
func (g *Gateway) RelistAfterOutage(o *Outage, log *slog.Logger) {
	g.relistAfterOutage(o, log, g.client.Discovery().RESTClient())
}

func newRelister(o *Outage, log *slog.Logger, probe rest.Interface, relist func(context.Context, time.Duration) error) *relister {
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	return &relister{outage: o, log: log, probe: probe, relist: relist}
}
