package controller

import (
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"maps"
	"slices"
	"sync"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/util/workqueue"

	"github.com/haproxy-k8s-sync/haproxy-k8s-sync/internal/announce"
	"github.com/haproxy-k8s-sync/haproxy-k8s-sync/internal/loop"
	"github.com/haproxy-k8s-sync/haproxy-k8s-sync/internal/pools"
)

// PoolStatus writes each AddressPool's status (addresses assigned and
// free, and why its spec is unusable; with an announcer, who announces
// its addresses) in goroutines of its own, like the Publisher: a pass
// only hands over the counts (Set). Under leader election it runs only
// on the leader.
type PoolStatus struct {
	client dynamic.Interface
	log    *slog.Logger
	// holders, when set, is who announces each address (the announcer's
	// view, Announced); looked at on every Poke and every few seconds
	holders func(context.Context) announce.Holders

	mu      sync.Mutex
	base    map[string]pools.AddressPoolStatus // the pass's counts and errors
	ranges  map[string][]pools.Range
	want    map[string]pools.AddressPoolStatus // base with the announcers' part
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

// WithHolders makes the statuses say who announces the pools' addresses
// (announcedBy, bounded, and their count), from holders; call it before
// Run. Poke it when they change.
func (s *PoolStatus) WithHolders(holders func(context.Context) announce.Holders) {
	if s != nil {
		s.holders = holders
	}
}

// Poke asks for a look at who announces the addresses.
func (s *PoolStatus) Poke() {
	if s != nil {
		s.wake.Poke()
	}
}

// Set records a pass's counts and errors, and each pool's ranges (whose
// addresses it reports announced). It never blocks.
func (s *PoolStatus) Set(counts map[string]pools.Counts, errs map[string]string, ranges map[string][]pools.Range) {
	if s == nil {
		return
	}
	base := make(map[string]pools.AddressPoolStatus, len(counts)+len(errs))
	for n, c := range counts {
		base[n] = pools.AddressPoolStatus{Assigned: c.Assigned, Free: c.Free}
	}
	for n, e := range errs {
		base[n] = pools.AddressPoolStatus{Error: e}
	}
	s.mu.Lock()
	same := maps.EqualFunc(base, s.base, pools.AddressPoolStatus.Equal) && maps.EqualFunc(ranges, s.ranges, slices.Equal)
	s.base, s.ranges = base, ranges
	s.mu.Unlock()
	if !same {
		s.wake.Poke()
	}
}

// compose is the statuses to write now: the pass's, with who announces.
func (s *PoolStatus) compose(ctx context.Context) {
	var holders announce.Holders
	if s.holders != nil {
		holders = s.holders(ctx)
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	want := make(map[string]pools.AddressPoolStatus, len(s.base))
	for n, st := range s.base {
		if st.Error == "" {
			st = withAnnounced(st, s.ranges[n], holders)
		}
		want[n] = st
	}
	s.want = want
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
	var tick <-chan time.Time // with holders: a look every few seconds
	if s.holders != nil {
		t := time.NewTicker(announcedEvery)
		defer t.Stop()
		tick = t.C
	}
	for {
		s.compose(ctx)
		s.mu.Lock()
		for n, st := range s.want {
			if w, ok := s.written[n]; !ok || !w.Equal(st) {
				q.Add(n)
			}
		}
		s.mu.Unlock()
		select {
		case <-ctx.Done():
			q.ShutDown()
			return
		case <-s.wake:
		case <-tick:
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
	var announced, by any // null: none (no announcer now)
	if st.Announced != nil {
		announced, by = *st.Announced, st.AnnouncedBy
	}
	body, err := json.Marshal(map[string]any{"status": map[string]any{"assigned": st.Assigned, "free": st.Free, "error": errField,
		"announced": announced, "announcedBy": by}})
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
