package source

import (
	"context"
	"sync/atomic"
	"testing"
	"time"
)

// A start waits for its caches by asking often: a cache that syncs on the
// 20th question is seen well before 20 of client-go's 100 ms polls
// (cache.WaitForCacheSync: 1.9 s); one that never syncs gives false when
// the context ends.
func TestWaitSynced(t *testing.T) {
	cases := []struct {
		name   string
		after  int64 // the question that first gets true; 0: never
		within time.Duration
		want   bool
	}{
		{name: "at once", after: 1, within: time.Second, want: true},
		{name: "20th question", after: 20, within: time.Second, want: true},
		{name: "never", after: 0, within: 5 * time.Second, want: false},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			var asked atomic.Int64
			synced := func() bool { return asked.Add(1) == tc.after || (tc.after > 0 && asked.Load() > tc.after) }
			ctx, cancel := context.WithTimeout(context.Background(), 300*time.Millisecond)
			if tc.want {
				ctx, cancel = context.WithTimeout(context.Background(), 10*time.Second)
			}
			defer cancel()
			start := time.Now()
			got := WaitSynced(ctx, synced)
			took := time.Since(start)
			if got != tc.want {
				t.Fatalf("WaitSynced = %v after %d questions, want %v", got, asked.Load(), tc.want)
			}
			if took > tc.within {
				t.Errorf("took %s (%d questions), want within %s", took, asked.Load(), tc.within)
			}
		})
	}
}
