package controller

import (
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"maps"
	"sync"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/util/workqueue"

	"github.com/haproxy-k8s-sync/haproxy-k8s-sync/internal/loop"
	"github.com/haproxy-k8s-sync/haproxy-k8s-sync/internal/pools"
)

// PoolStatus writes each AddressPool's status (addresses assigned and
// free, and why its spec is unusable) in goroutines of its own, like the
// Publisher: a pass only hands over the counts (Set). Under leader
// election it runs only on the leader.
type PoolStatus struct {
	client dynamic.Interface
	log    *slog.Logger

	mu      sync.Mutex
	want    map[string]pools.AddressPoolStatus
	written map[string]pools.AddressPoolStatus
	wake    loop.Wake
}

// NewPoolStatus returns a PoolStatus writing through client.
func NewPoolStatus(client dynamic.Interface, log *slog.Logger) *PoolStatus {
	if log == nil {
		log = slog.Default()
	}
	return &PoolStatus{client: client, log: log, written: map[string]pools.AddressPoolStatus{}, wake: loop.NewWake()}
}

// Set records a pass's counts and errors. It never blocks.
func (s *PoolStatus) Set(counts map[string]pools.Counts, errs map[string]string) {
	if s == nil {
		return
	}
	want := make(map[string]pools.AddressPoolStatus, len(counts)+len(errs))
	for n, c := range counts {
		want[n] = pools.AddressPoolStatus{Assigned: c.Assigned, Free: c.Free}
	}
	for n, e := range errs {
		want[n] = pools.AddressPoolStatus{Error: e}
	}
	s.mu.Lock()
	same := maps.Equal(want, s.want)
	s.want = want
	s.mu.Unlock()
	if !same {
		s.wake.Poke()
	}
}

// Run writes statuses until ctx ends.
func (s *PoolStatus) Run(ctx context.Context) {
	if s == nil {
		return
	}
	q := workqueue.NewTypedRateLimitingQueueWithConfig(
		workqueue.NewTypedItemExponentialFailureRateLimiter[string](100*time.Millisecond, 30*time.Second),
		workqueue.TypedRateLimitingQueueConfig[string]{Name: "haproxy-k8s-sync-pool-status"})
	go func() {
		for {
			n, quit := q.Get()
			if quit {
				return
			}
			if err := s.write(ctx, n); err != nil && ctx.Err() == nil {
				s.log.Warn("could not write AddressPool status; will retry", "pool", n, "err", err)
				q.AddRateLimited(n)
			} else {
				q.Forget(n)
			}
			q.Done(n)
		}
	}()
	s.mu.Lock()
	s.written = map[string]pools.AddressPoolStatus{} // a new leader writes everything once
	s.mu.Unlock()
	for {
		s.mu.Lock()
		for n, st := range s.want {
			if w, ok := s.written[n]; !ok || w != st {
				q.Add(n)
			}
		}
		s.mu.Unlock()
		select {
		case <-ctx.Done():
			q.ShutDown()
			return
		case <-s.wake:
		}
	}
}

func (s *PoolStatus) write(ctx context.Context, name string) error {
	s.mu.Lock()
	st, ok := s.want[name]
	s.mu.Unlock()
	if !ok {
		return nil
	}
	var errField any // null removes an error that went away (merge patch)
	if st.Error != "" {
		errField = st.Error
	}
	body, err := json.Marshal(map[string]any{"status": map[string]any{"assigned": st.Assigned, "free": st.Free, "error": errField}})
	if err != nil {
		return err
	}
	_, err = s.client.Resource(pools.GVR).Patch(ctx, name, types.MergePatchType, body, metav1.PatchOptions{}, "status")
	if apierrors.IsNotFound(err) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("status of AddressPool %s: %w", name, err)
	}
	s.mu.Lock()
	s.written[name] = st
	s.mu.Unlock()
	return nil
}
