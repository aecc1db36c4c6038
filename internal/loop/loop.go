// Package loop is the work loop shared by the Service controller
// (internal/controller) and the apiserver mode (internal/apiserverlb): one
// rate-limited workqueue of a few keys (a pass, a connection attempt), one
// worker, and the rule for a key after its turn (Requeue). Retries happen
// only through this queue. Writers is the status publishers' worker pool.
package loop

import (
	"context"
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
}

// Loop runs turns of its keys, one at a time.
type Loop struct {
	opts  Options
	queue workqueue.TypedRateLimitingInterface[string]
}

// New makes a loop; its queue's metrics go to the workqueue metrics
// provider set before (metrics.New).
func New(opts Options) *Loop {
	rl := workqueue.NewTypedItemExponentialFailureRateLimiter[string](opts.BaseDelay, opts.MaxDelay)
	return &Loop{opts: opts, queue: workqueue.NewTypedRateLimitingQueueWithConfig(rl,
		workqueue.TypedRateLimitingQueueConfig[string]{Name: opts.Name})}
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
	defer l.queue.ShutDown()
	go func() {
		<-ctx.Done()
		l.queue.ShutDown()
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
	o := turn(ctx, key)
	switch {
	case o.Later:
		l.queue.Forget(key)
		l.queue.AddAfter(key, o.After)
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
