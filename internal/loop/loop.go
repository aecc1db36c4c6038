// Package loop is the work loop shared by the Service controller
// (internal/controller), the Gateway mode (internal/gatewayctl), each
// --instance's driver (internal/driver) and the apiserver mode
// (internal/apiserverlb): one rate-limited workqueue of a few keys (a
// pass, a connection attempt), one worker, and the rule for a key after
// its turn (Outcome). Retries happen
// only through this queue's rate limiter; a turn put off (Outcome.Later)
// comes back through a timer of the loop's own that adds the key, so the
// queue's retries metric counts failures only. Writers is the status
// publishers' worker pool.
package loop

import (
	"context"
	"sync"
	"time"

	"k8s.io/client-go/util/workqueue"
)

// Options of a loop.
type Options struct {
	// Name names the queue in the workqueue metrics.
	Name string
	// BaseDelay and MaxDelay bound the exponential backoff of a key that
	// keeps failing.
	BaseDelay, MaxDelay time.Duration
	// OnFailure, when set, is told of each failed turn and how often the
	// key has been retried so far.
	OnFailure func(key string, err error, retries int)
	// MetricsProvider, when set, takes the queue's metrics instead of the
	// process's provider (tests).
	MetricsProvider workqueue.MetricsProvider
	// Passes, when set, is told when each turn starts and ends (the cli:
	// the collector's quiet moments, internal/quietgc).
	Passes PassWatcher
}

// PassWatcher is told of each turn, its start and its end (Options.Passes).
// Its methods must not block.
type PassWatcher interface {
	PassStarted()
	PassEnded()
}

// Loop runs turns of its keys, one at a time.
type Loop struct {
	opts  Options
	queue workqueue.TypedRateLimitingInterface[string]

	mu      sync.Mutex
	later   map[string]*deferral // keys put off, not yet added again
	stopped bool
}

// A deferral is a key's timer: it adds the key again at its time.
type deferral struct {
	at    time.Time
	timer *time.Timer
}

// New makes a loop; its queue's metrics go to the workqueue metrics
// provider set before (metrics.New), or to opts.MetricsProvider.
func New(opts Options) *Loop {
	rl := workqueue.NewTypedItemExponentialFailureRateLimiter[string](opts.BaseDelay, opts.MaxDelay)
	return &Loop{opts: opts, later: map[string]*deferral{}, queue: workqueue.NewTypedRateLimitingQueueWithConfig(rl,
		workqueue.TypedRateLimitingQueueConfig[string]{Name: opts.Name, MetricsProvider: opts.MetricsProvider})}
}

// Add asks for a turn of key; keys added while one waits are merged.
func (l *Loop) Add(key string) { l.queue.Add(key) }

// Outcome is what a key's turn came to, which decides what follows.
type Outcome struct {
	// Err: the turn failed; the key comes back with backoff.
	Err error
	// Later: the work was put off (a driver's ErrDeferred); the key comes
	// back After, its backoff reset. It wins over Err.
	Later bool
	After time.Duration
}

// Run gives each key added its turn until ctx ends, then returns
// ctx.Err(). A turn that fails while ctx ends is not retried.
func (l *Loop) Run(ctx context.Context, turn func(ctx context.Context, key string) Outcome) error {
	defer l.shutDown()
	go func() {
		<-ctx.Done()
		l.shutDown()
	}()
	for l.next(ctx, turn) {
	}
	return ctx.Err()
}

func (l *Loop) next(ctx context.Context, turn func(context.Context, string) Outcome) bool {
	key, quit := l.queue.Get()
	if quit {
		return false
	}
	defer l.queue.Done(key)
	if w := l.opts.Passes; w != nil {
		w.PassStarted()
		defer w.PassEnded()
	}
	o := turn(ctx, key)
	switch {
	case o.Later:
		l.queue.Forget(key)
		l.addLater(key, o.After)
	case o.Err != nil && ctx.Err() != nil:
		// Stopping: no retry.
	case o.Err != nil:
		l.queue.AddRateLimited(key)
		if l.opts.OnFailure != nil {
			l.opts.OnFailure(key, o.Err, l.queue.NumRequeues(key))
		}
	default:
		l.queue.Forget(key)
	}
	return true
}

// addLater adds key again after d. It is not the queue's AddAfter, which
// client-go counts as a retry (workqueue_retries_total): a reload held back
// by --min-reload-interval is the controller working as meant, not a
// failure. Several deferrals of one key share one timer, at the earliest
// time asked for.
func (l *Loop) addLater(key string, d time.Duration) {
	if d <= 0 {
		l.queue.Add(key)
		return
	}
	at := time.Now().Add(d)
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.stopped {
		return
	}
	if p, ok := l.later[key]; ok {
		if !at.Before(p.at) {
			return
		}
		p.timer.Stop()
	}
	p := &deferral{at: at}
	p.timer = time.AfterFunc(d, func() {
		l.mu.Lock()
		if l.later[key] == p {
			delete(l.later, key)
		}
		l.mu.Unlock()
		l.queue.Add(key) // a no-op once the queue is shut down
	})
	l.later[key] = p
}

// shutDown stops the queue and every pending deferral.
func (l *Loop) shutDown() {
	l.mu.Lock()
	l.stopped = true
	for key, p := range l.later {
		p.timer.Stop()
		delete(l.later, key)
	}
	l.mu.Unlock()
	l.queue.ShutDown()
}

// pending is how many keys wait for their deferral (tests).
func (l *Loop) pending() int {
	l.mu.Lock()
	defer l.mu.Unlock()
	return len(l.later)
}
