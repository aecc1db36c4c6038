package e2e

import (
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// TestBurstWriters: writeBurst writes every index once, never more than
// its writers at a time, reports each failed write's error and runs
// written for each other index, once.
func TestBurstWriters(t *testing.T) {
	errBroken := errors.New("broken")
	for _, tc := range []struct {
		n, writers, wantMax int
		fail                map[int]bool
	}{
		{n: 100, writers: 16, wantMax: 16},
		{n: 100, writers: 1, wantMax: 1},
		{n: 10, writers: 0, wantMax: 10},
		{n: 5, writers: 16, wantMax: 5},
		{n: 40, writers: 4, wantMax: 4, fail: map[int]bool{3: true, 17: true, 39: true}},
		{n: 0, writers: 16, wantMax: 0},
	} {
		t.Run(fmt.Sprintf("n%d-w%d-fail%d", tc.n, tc.writers, len(tc.fail)), func(t *testing.T) {
			var in, most atomic.Int64
			var mu sync.Mutex
			wrote, after := map[int]int{}, map[int]int{}
			errs := writeBurst(tc.n, tc.writers, func(i int) (time.Time, error) {
				now := in.Add(1)
				defer in.Add(-1)
				for m := most.Load(); now > m && !most.CompareAndSwap(m, now); m = most.Load() {
				}
				// Long enough for every writer to be in a write at once.
				time.Sleep(2 * time.Millisecond) // not a synchronisation: it widens the overlap the count checks
				mu.Lock()
				wrote[i]++
				mu.Unlock()
				if tc.fail[i] {
					return time.Time{}, fmt.Errorf("write %d: %w", i, errBroken)
				}
				return time.Now(), nil
			}, func(i int, at time.Time) {
				if at.IsZero() {
					t.Errorf("written(%d) without its time", i)
				}
				mu.Lock()
				after[i]++
				mu.Unlock()
			})
			if got := int(most.Load()); got > tc.wantMax || (tc.wantMax > 1 && got < 2) {
				t.Errorf("at most %d writes at once, want <= %d (and concurrent)", got, tc.wantMax)
			}
			if len(errs) != tc.n {
				t.Fatalf("%d errors, want one per index (%d)", len(errs), tc.n)
			}
			for i := range tc.n {
				if wrote[i] != 1 {
					t.Errorf("index %d written %d times, want once", i, wrote[i])
				}
				if tc.fail[i] {
					if !errors.Is(errs[i], errBroken) || after[i] != 0 {
						t.Errorf("index %d: error %v, written called %d times; want errBroken, none", i, errs[i], after[i])
					}
					continue
				}
				if errs[i] != nil || after[i] != 1 {
					t.Errorf("index %d: error %v, written called %d times; want nil, once", i, errs[i], after[i])
				}
			}
		})
	}
}
