package loop

import (
	"context"
	"errors"
	"sync"
	"testing"
	"time"
)

// A failing key comes back with backoff until it succeeds; a key put off
// comes back after its delay; OnFailure hears of each failure.
func TestTurns(t *testing.T) {
	for _, tc := range []struct {
		name     string
		outcomes []Outcome // of the key's successive turns
		failures int
	}{
		{name: "success: one turn", outcomes: []Outcome{{}}},
		{name: "two failures, then success", outcomes: []Outcome{{Err: errors.New("a")}, {Err: errors.New("b")}, {}}, failures: 2},
		{name: "put off, then done", outcomes: []Outcome{{Later: true, After: 20 * time.Millisecond}, {}}},
		{name: "put off wins over its error", outcomes: []Outcome{{Later: true, Err: errors.New("deferred")}, {}}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var mu sync.Mutex
			failures, turns := 0, 0
			ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
			defer cancel()
			l := New(Options{Name: "test-" + tc.name, BaseDelay: time.Millisecond, MaxDelay: 10 * time.Millisecond,
				OnFailure: func(key string, err error, retries int) {
					mu.Lock()
					defer mu.Unlock()
					failures++
					if key != "k" || err == nil || retries != failures {
						t.Errorf("OnFailure(%q, %v, %d) after %d failures", key, err, retries, failures)
					}
				}})
			l.Add("k")
			done := make(chan error, 1)
			go func() {
				done <- l.Run(ctx, func(_ context.Context, key string) Outcome {
					mu.Lock()
					defer mu.Unlock()
					o := tc.outcomes[turns]
					turns++
					if turns == len(tc.outcomes) {
						cancel()
					}
					return o
				})
			}()
			if err := <-done; !errors.Is(err, context.Canceled) {
				t.Fatalf("Run: %v (turns %d of %d)", err, turns, len(tc.outcomes))
			}
			if turns != len(tc.outcomes) || failures != tc.failures {
				t.Errorf("turns %d failures %d, want %d and %d", turns, failures, len(tc.outcomes), tc.failures)
			}
		})
	}
}

// A turn that fails while the loop stops is not retried.
func TestNoRetryWhenStopping(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	failed := false
	l := New(Options{Name: "test-stopping", BaseDelay: time.Millisecond, MaxDelay: time.Millisecond,
		OnFailure: func(string, error, int) { failed = true }})
	l.Add("k")
	turns := 0
	err := l.Run(ctx, func(context.Context, string) Outcome {
		turns++
		cancel()
		return Outcome{Err: errors.New("stopping")}
	})
	if !errors.Is(err, context.Canceled) || turns != 1 || failed {
		t.Errorf("Run %v, %d turns, failure reported %v", err, turns, failed)
	}
}
