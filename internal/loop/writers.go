package loop

import (
	"context"
	"sync"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/client-go/util/workqueue"
)

// Writers is the worker pool of a status publisher (the Services' and the
// Gateway API objects'): Enqueue adds the keys whose status may need a
// write, at start and on every wake; Workers workers write them, each key
// retried through the queue with backoff when its write fails. A conflict
// (the cache behind the apiserver) is retried without a word; any other
// failure is told to OnError first. With Every > 0, Enqueue also runs
// every Every, whatever woke it.
type Writers[K comparable] struct {
	Name    string // the queue's name in the workqueue metrics
	Workers int
	Wake    <-chan struct{}
	Every   time.Duration
	Enqueue func(q workqueue.TypedRateLimitingInterface[K])
	Write   func(ctx context.Context, k K) error
	OnError func(k K, err error, retries int)
}

// Run writes until ctx ends, then waits for the workers.
func (w Writers[K]) Run(ctx context.Context) {
	q := workqueue.NewTypedRateLimitingQueueWithConfig(
		workqueue.NewTypedItemExponentialFailureRateLimiter[K](100*time.Millisecond, 30*time.Second),
		workqueue.TypedRateLimitingQueueConfig[K]{Name: w.Name})
	var wg sync.WaitGroup
	for range w.Workers {
		wg.Go(func() {
			for w.next(ctx, q) {
			}
		})
	}
	var tick <-chan time.Time // nil: never
	if w.Every > 0 {
		t := time.NewTicker(w.Every)
		defer t.Stop()
		tick = t.C
	}
	w.Enqueue(q) // a new leader looks at every object
	for {
		select {
		case <-ctx.Done():
			q.ShutDown()
			wg.Wait()
			return
		case <-w.Wake:
			w.Enqueue(q)
		case <-tick:
			w.Enqueue(q)
		}
	}
}

func (w Writers[K]) next(ctx context.Context, q workqueue.TypedRateLimitingInterface[K]) bool {
	k, quit := q.Get()
	if quit {
		return false
	}
	defer q.Done(k)
	err := w.Write(ctx, k)
	switch {
	case err == nil || ctx.Err() != nil:
		q.Forget(k)
	case apierrors.IsConflict(err):
		q.AddRateLimited(k) // the cache is behind; the retry reads it again
	default:
		if w.OnError != nil {
			w.OnError(k, err, q.NumRequeues(k))
		}
		q.AddRateLimited(k)
	}
	return true
}
