package apiserverlb

import (
	"context"
	"errors"
	"log/slog"
	"net/netip"
	"slices"
	"sync/atomic"
	"time"

	"k8s.io/client-go/kubernetes"

	"github.com/haproxy-k8s-sync/haproxy-k8s-sync/internal/driver"
	"github.com/haproxy-k8s-sync/haproxy-k8s-sync/internal/loop"
	"github.com/haproxy-k8s-sync/haproxy-k8s-sync/internal/metrics"
	"github.com/haproxy-k8s-sync/haproxy-k8s-sync/internal/source"
)

// Work items. A pass recomputes the whole list; connecting is retried
// through the queue's backoff like a failed pass.
const (
	keySync    = "sync"
	keyConnect = "connect"
)

// syncReport is how often caches that have not synced are reported.
const syncReport = 30 * time.Second

// Options configure the loop.
type Options struct {
	Sources            []string // preference order (ParseSources)
	Shape              Shape
	Static             []netip.AddrPort // --bootstrap-servers
	Port               uint16           // apiserver port for nodes, and for ConfigMap lines without one
	ConfigMapNamespace string
	ConfigMapName      string
	StateFile          string        // last applied list; "" keeps none
	ResyncPeriod       time.Duration // verify HAProxy's state and re-apply this often; 0: never
	// RetryMax caps the backoff of connecting and of failed passes.
	RetryMax time.Duration
	Logger   *slog.Logger
	Metrics  *metrics.Instance // nil: no metrics
	// Outage, when set, sees the client Connect makes fail at its
	// transport (its WrapTransport is in the client's rest.Config): once
	// the apiserver answers again after an outage, the informers relist
	// at once (relist) instead of after client-go's reflector backoff.
	Outage *source.Outage
}

// Connect builds a client and checks that the API answers. It is retried
// with backoff until it succeeds: before the cluster exists, while the
// token file is not written yet, while every apiserver is down.
type Connect func(ctx context.Context) (kubernetes.Interface, error)

// Loop keeps HAProxy's apiserver backend on the preferred source's list.
type Loop struct {
	opts    Options
	drv     driver.Driver
	connect Connect
	loop    *loop.Loop
	log     *slog.Logger

	watch   atomic.Pointer[watcher] // set once connected; used when synced
	serving atomic.Bool             // a pass has handed HAProxy a non-empty list

	// Used by passes only (serial).
	boot       Choice // served until the caches sync: the state file's list, else the static one
	current    Choice // last applied
	saved      Choice // what the state file holds
	lastWhy    string // last reason for keeping a list, logged once
	warnedNone bool   // "no apiserver known yet" logged
	connFails  int
}

// New wires a loop. connect may be nil when no source needs the API.
func New(drv driver.Driver, connect Connect, opts Options) *Loop {
	if opts.Logger == nil {
		opts.Logger = slog.Default()
	}
	if opts.RetryMax == 0 {
		opts.RetryMax = 5 * time.Second
	}
	log := opts.Logger
	return &Loop{
		opts:    opts,
		drv:     drv,
		connect: connect,
		loop: loop.New(loop.Options{Name: "haproxy-k8s-sync-apiserver", BaseDelay: 200 * time.Millisecond, MaxDelay: opts.RetryMax,
			OnFailure: func(key string, err error, retries int) {
				if key != keyConnect { // tryConnect logs its own attempts
					log.Error("apiserver pass failed; will retry", "err", err, "retries", retries)
				}
			}}),
		log: log,
	}
}

// Known reports whether a list of apiservers is known: a pass has handed
// one to the driver (whether or not it applied). Until then HAProxy has
// nothing to serve (for /readyz).
func (l *Loop) Known() bool { return l.serving.Load() }

// Trigger asks for a pass.
func (l *Loop) Trigger() { l.loop.Add(keySync) }

// Run serves the bootstrap list at once, connects to the API (retrying),
// then follows the sources until ctx ends.
func (l *Loop) Run(ctx context.Context) error {
	saved, err := LoadState(l.opts.StateFile)
	if err != nil {
		l.log.Warn("ignoring the unreadable apiserver state file", "err", err)
	}
	l.saved = saved
	l.boot = saved
	static := Choice{Source: SourceStatic, Servers: l.opts.Static}
	useStatic := slices.Contains(l.opts.Sources, SourceStatic)
	switch {
	case useStatic && len(static.Servers) > 0 && (saved.Source == SourceStatic || !usesAPI(l.opts.Sources)):
		// The kept list came from the flag, or the flag is the only
		// source: the flag as it is now wins.
		l.boot = static
	case len(l.boot.Servers) > 0:
		l.boot.Source = SourceStateFile
	case useStatic:
		l.boot = static
	}
	l.Trigger()
	if usesAPI(l.opts.Sources) && l.connect != nil {
		l.loop.Add(keyConnect)
	}
	go driver.Resync(ctx, l.drv, l.opts.ResyncPeriod, l.log, l.opts.Metrics.Drift, l.Trigger)
	return l.loop.Run(ctx, func(ctx context.Context, key string) loop.Outcome {
		if key == keyConnect {
			return loop.Outcome{Err: l.tryConnect(ctx)}
		}
		return driver.Outcome(l.sync(ctx))
	})
}

// tryConnect makes one attempt; on success the informers start and a
// goroutine triggers a pass once their caches have synced.
func (l *Loop) tryConnect(ctx context.Context) error {
	cctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	client, err := l.connect(cctx)
	if err != nil {
		l.connFails++
		// The first failure, then about every half minute at the cap.
		if l.connFails == 1 || l.connFails%6 == 0 {
			l.log.Warn("kube-apiserver not reachable yet; serving the last known list, will retry",
				"err", err, "attempts", l.connFails, "serving", FormatServers(l.current.Servers), "source", l.current.Source)
		}
		return err
	}
	w := newWatcher(client, l.opts)
	if err := w.start(ctx, l.Trigger); err != nil {
		return err
	}
	l.log.Info("connected to the kube-apiserver; waiting for caches", "after_attempts", l.connFails+1)
	if l.opts.Outage != nil {
		go source.WatchOutages(ctx, l.opts.Outage, l.log, client.Discovery().RESTClient(), func(ctx context.Context) error {
			return l.relist(ctx, client)
		})
	}
	go func() {
		// Caches that do not sync (RBAC refusing a source, say) are
		// reported every half minute; the bootstrap list keeps serving.
		for waited := time.Duration(0); ; waited += syncReport {
			wctx, cancel := context.WithTimeout(ctx, syncReport)
			synced := w.waitSynced(wctx)
			cancel()
			switch {
			case l.watch.Load() != nil:
				w.stop() // a relist came first
				return
			case synced:
				if !l.watch.CompareAndSwap(nil, w) {
					w.stop()
					return
				}
				l.log.Info("caches synced")
				l.Trigger()
				return
			case ctx.Err() != nil:
				return
			}
			l.log.Warn("caches not synced yet (is every source allowed by RBAC?); serving the last known list", "waited", waited+syncReport)
		}
	}()
	return nil
}

// relist starts new informers, waits until they have synced (at most
// syncReport) and puts them in place of the ones in use, which stop; a
// pass follows. If they do not sync in time they stop and the old ones
// stay.
func (l *Loop) relist(ctx context.Context, client kubernetes.Interface) error {
	w := newWatcher(client, l.opts)
	if err := w.start(ctx, l.Trigger); err != nil {
		w.stop()
		return err
	}
	wctx, cancel := context.WithTimeout(ctx, syncReport)
	defer cancel()
	if !w.waitSynced(wctx) {
		w.stop()
		return errors.New("the new informers did not sync within " + syncReport.String())
	}
	if old := l.watch.Swap(w); old != nil {
		old.stop()
	}
	l.Trigger()
	return nil
}

// sync is one pass: choose the list, apply it, remember it.
func (l *Loop) sync(ctx context.Context) (driver.Result, error) {
	var d Decision
	if w := l.watch.Load(); w != nil && w.synced() {
		found := w.found(l.opts.Port)
		found[SourceStatic] = Found{Servers: l.opts.Static}
		d = Choose(l.opts.Sources, found, l.current)
	} else if len(l.current.Servers) > 0 {
		d = Decision{Choice: l.current} // never reconcile against caches that have not synced
	} else {
		d = Decision{Choice: l.boot}
	}
	l.report(d)
	if len(d.Servers) == 0 {
		// Nothing known yet: HAProxy keeps what it runs.
		if !l.warnedNone {
			l.warnedNone = true
			l.log.Warn("no apiserver known yet: nothing to serve until a source has one (--bootstrap-servers serves before the cluster answers)")
		}
		return driver.Result{}, nil
	}
	start := time.Now()
	cfg := l.opts.Shape.Config(d.Servers)
	res, err := l.drv.Apply(ctx, cfg)
	l.opts.Metrics.Applied(cfg, res, err, 0, time.Since(start))
	l.serving.Store(true)
	if res.Reloaded || res.Ops > 0 || (err != nil && !errors.Is(err, driver.ErrDeferred)) {
		l.log.Info("update", "source", d.Source, "servers", len(d.Servers), "reload", res.Reload,
			"runtime", res.Runtime, "ops", res.Ops, "total", time.Since(start), "reloaded", res.Reloaded, "err", err)
	}
	if err != nil {
		return res, err
	}
	l.current = d.Choice
	// The state file's own list is saved again only once a source replaces it.
	if l.current.Source != SourceStateFile && !sameChoice(l.current, l.saved) {
		if err := SaveState(l.opts.StateFile, l.current, time.Now()); err != nil {
			l.log.Warn("could not save the apiserver state file", "err", err)
		} else {
			l.saved = l.current
		}
	}
	return res, nil
}

// report logs a new list (and its source), and once each new reason for
// keeping the last one.
func (l *Loop) report(d Decision) {
	if d.Kept {
		if why := d.Why.Error(); why != l.lastWhy {
			l.lastWhy = why
			l.log.Warn("keeping the last apiserver list", "reason", why, "source", l.current.Source, "servers", FormatServers(l.current.Servers))
		}
		return
	}
	l.lastWhy = ""
	if !sameChoice(d.Choice, l.current) && len(d.Servers) > 0 {
		l.log.Info("apiservers", "source", d.Source, "servers", FormatServers(d.Servers),
			"previous_source", l.current.Source, "previous", FormatServers(l.current.Servers))
	}
}

func sameChoice(a, b Choice) bool { return a.Source == b.Source && slices.Equal(a.Servers, b.Servers) }
