package driver

import (
	"context"
	"testing"
	"time"
)

func TestChangesTake(t *testing.T) {
	for _, tc := range []struct {
		name      string
		before    int  // changes noted before the pass takes them
		after     int  // changes noted after it took them
		changed   bool // the pass carries a change time
		preempted bool // a newer pass waits
	}{
		{"a resync pass: no change", 0, 0, false, false},
		{"one change", 1, 0, true, false},
		{"a burst", 3, 0, true, false},
		{"a change during the pass", 1, 1, true, true},
		{"only after it took its snapshot", 0, 2, false, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var c Changes
			first := time.Now()
			for range tc.before {
				c.Note()
			}
			ctx := c.Take(context.Background())
			for range tc.after {
				c.Note()
			}
			at := ChangedAt(ctx)
			if got := !at.IsZero(); got != tc.changed {
				t.Errorf("ChangedAt = %v, want a time: %v", at, tc.changed)
			}
			if tc.changed && (at.Before(first.Add(-time.Millisecond)) || at.After(time.Now())) {
				t.Errorf("ChangedAt = %v, not when the first change was noted (%v)", at, first)
			}
			if !Preemptible(ctx) {
				t.Error("Take's context carries no preempt check")
			}
			if got := Preempted(ctx); got != tc.preempted {
				t.Errorf("Preempted = %v, want %v", got, tc.preempted)
			}
			// The next pass takes the changes that came after.
			next := c.Take(context.Background())
			if got := !ChangedAt(next).IsZero(); got != (tc.after > 0) {
				t.Errorf("the next pass carries a change: %v, want %v", got, tc.after > 0)
			}
			if Preempted(ctx) || Preempted(next) {
				t.Error("preempted after the next pass took every change")
			}
		})
	}
}

// A pass is measured from the first change of a burst, not the last.
func TestChangesFirstOfABurst(t *testing.T) {
	var c Changes
	c.Note()
	first := c.first.Load()
	c.Note()
	c.Note()
	if got := ChangedAt(c.Take(context.Background())); got.UnixNano() != first {
		t.Errorf("ChangedAt = %v, want the first change's %v", got, time.Unix(0, first))
	}
}
