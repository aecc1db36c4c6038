package loop

import (
	"context"
	"errors"
	"sync"
	"testing"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/util/workqueue"
)

// Each key is written until its write succeeds: a conflict is retried
// without a word, any other failure is told to OnError, then retried.
func TestWriters(t *testing.T) {
	conflict := apierrors.NewConflict(schema.GroupResource{Resource: "services"}, "a", errors.New("changed"))
	fails := map[string][]error{"a": {conflict, conflict}, "b": {errors.New("boom")}, "c": nil}
	var mu sync.Mutex
	writes := map[string]int{}
	var told []string
	done := make(chan struct{})
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	wake := make(chan struct{})
	go func() {
		Writers[string]{
			Name: "test-writers", Workers: 2, Wake: wake,
			Enqueue: func(q workqueue.TypedRateLimitingInterface[string]) {
				for k := range fails {
					q.Add(k)
				}
			},
			Write: func(_ context.Context, k string) error {
				mu.Lock()
				defer mu.Unlock()
				n := writes[k]
				writes[k]++
				if n < len(fails[k]) {
					return fails[k][n]
				}
				return nil
			},
			OnError: func(k string, err error, retries int) {
				mu.Lock()
				told = append(told, k)
				mu.Unlock()
			},
		}.Run(ctx)
		close(done)
	}()
	deadline := time.Now().Add(10 * time.Second)
	for {
		mu.Lock()
		all := writes["a"] == 3 && writes["b"] == 2 && writes["c"] == 1
		mu.Unlock()
		if all {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("writes %v, want a 3 (two conflicts), b 2 (one failure), c 1", writes)
		}
		time.Sleep(10 * time.Millisecond) // poll interval, not synchronisation
	}
	cancel()
	<-done
	if len(told) != 1 || told[0] != "b" {
		t.Errorf("OnError told of %v, want only b (conflicts are retried without a word)", told)
	}
	if writes["a"] != 3 || writes["b"] != 2 || writes["c"] != 1 {
		t.Errorf("writes %v after success: a key written again", writes)
	}
}

// With Every, Enqueue runs again on its own, nothing woken.
func TestWritersEvery(t *testing.T) {
	var mu sync.Mutex
	enqueued := 0
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() {
		Writers[string]{
			Name: "test-writers-every", Workers: 1, Every: 5 * time.Millisecond,
			Enqueue: func(workqueue.TypedRateLimitingInterface[string]) {
				mu.Lock()
				enqueued++
				mu.Unlock()
			},
			Write: func(context.Context, string) error { return nil },
		}.Run(ctx)
		close(done)
	}()
	defer func() { cancel(); <-done }()
	deadline := time.Now().Add(10 * time.Second)
	for {
		mu.Lock()
		n := enqueued
		mu.Unlock()
		if n >= 3 {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("Enqueue ran %d times in 10s with Every 5ms and no wake, want 3 or more", n)
		}
		time.Sleep(5 * time.Millisecond) // poll interval, not synchronisation
	}
}
