package runtimeapi

import (
	"context"
	"testing"
	"time"
)

// debounceHarness runs debounce.run on a fake clock. Every timer the loop
// arms is handed to the test (the loop waits for that), and fires only when
// the test moves the clock past it, so each step is deterministic.
type debounceHarness struct {
	t        *testing.T
	start    time.Time
	now      time.Time // read by the loop only while the test waits on it
	kicks    chan struct{}
	armed    chan fakeTimer
	flushes  chan time.Time // when each flush ran
	results  chan bool      // what the flush reports
	timer    *fakeTimer     // latest armed, not fired
	flushErr error          // the context's error as the latest flush saw it
	cancel   func()         // ends the loop's context
	done     chan struct{}
}

type fakeTimer struct {
	at time.Time
	c  chan time.Time
}

func newDebounceHarness(t *testing.T, quiet, maxDelay time.Duration) *debounceHarness {
	h := &debounceHarness{
		t: t, start: time.Unix(1000, 0), kicks: make(chan struct{}, 1), armed: make(chan fakeTimer),
		flushes: make(chan time.Time), results: make(chan bool), done: make(chan struct{}),
	}
	h.now = h.start
	b := debounce{
		quiet: quiet, maxDelay: maxDelay, final: 5 * time.Second,
		now: func() time.Time { return h.now },
		after: func(d time.Duration) <-chan time.Time {
			ft := fakeTimer{at: h.now.Add(d), c: make(chan time.Time, 1)}
			h.armed <- ft
			return ft.c
		},
	}
	ctx, cancel := context.WithCancel(context.Background())
	h.cancel = cancel
	go func() {
		defer close(h.done)
		b.run(ctx, h.kicks, func(ctx context.Context) bool {
			h.flushErr = ctx.Err()
			h.flushes <- h.now
			return <-h.results
		})
	}()
	t.Cleanup(func() {
		cancel()
		select {
		case <-h.done:
		case <-time.After(5 * time.Second):
			t.Error("debounce loop did not stop")
		}
	})
	return h
}

// at is the fake time since the start.
func (h *debounceHarness) at() time.Duration { return h.now.Sub(h.start) }

// kick signals a change and returns when the loop has armed its timer.
func (h *debounceHarness) kick() {
	h.t.Helper()
	h.kicks <- struct{}{}
	h.waitArmed()
}

func (h *debounceHarness) waitArmed() {
	h.t.Helper()
	select {
	case ft := <-h.armed:
		h.timer = &ft
	case <-time.After(5 * time.Second):
		h.t.Fatalf("at %s: the loop armed no timer", h.at())
	}
}

// advance moves the clock by d and fires the armed timer if it is due; it
// reports whether it fired. A fired timer must lead to a flush, which
// reports ok; after a flush that did not complete the loop re-arms.
func (h *debounceHarness) advance(d time.Duration, ok bool) bool {
	h.t.Helper()
	h.now = h.now.Add(d)
	if h.timer == nil || h.timer.at.After(h.now) {
		return false
	}
	h.timer.c <- h.now
	h.timer = nil
	select {
	case <-h.flushes:
	case <-time.After(5 * time.Second):
		h.t.Fatalf("at %s: timer fired, no flush", h.at())
	}
	h.results <- ok
	if !ok {
		h.waitArmed()
	}
	return true
}

func TestDebounce(t *testing.T) {
	const quiet, maxDelay, step = 50 * time.Millisecond, 300 * time.Millisecond, 10 * time.Millisecond
	h := newDebounceHarness(t, quiet, maxDelay)

	// Changes every 10 ms, faster than the quiet period: no write until
	// the maximum delay after the first one, then exactly then.
	h.kick()
	for h.at() < maxDelay-step {
		if h.advance(step, true) {
			t.Fatalf("flushed at %s while changes kept coming", h.at())
		}
		h.kick()
	}
	if h.advance(step, true) != true || h.at() != maxDelay {
		t.Fatalf("at %s: no flush at the maximum delay %s", h.at(), maxDelay)
	}

	// A single change: written once the quiet period has passed, not before.
	h.advance(time.Second, true)
	base := h.at()
	h.kick()
	if h.advance(quiet-time.Millisecond, true) {
		t.Fatalf("flushed %s after a single change, before the quiet period", h.at()-base)
	}
	if !h.advance(time.Millisecond, true) {
		t.Fatalf("no flush %s after a single change", h.at()-base)
	}

	// A flush that found changes made meanwhile is tried again after a
	// quiet period.
	h.advance(time.Second, true)
	base = h.at()
	h.kick()
	if !h.advance(quiet, false) {
		t.Fatal("no flush after the quiet period")
	}
	if got := h.timer.at.Sub(h.now); got != quiet {
		t.Fatalf("retry armed in %s, want %s", got, quiet)
	}
	if !h.advance(quiet, true) || h.at()-base != 2*quiet {
		t.Fatalf("at %s: no retry after the quiet period", h.at()-base)
	}

	// Overdue while changes keep coming: attempts at the maximum delay,
	// then one per quiet period, not one per change.
	h.advance(time.Second, true)
	base = h.at()
	h.kick()
	var attempts []time.Duration
	for len(attempts) < 4 {
		ok := len(attempts) == 3
		if h.advance(step, ok) {
			attempts = append(attempts, h.at()-base)
		}
		if !ok || len(attempts) < 4 {
			h.kick()
		}
	}
	want := []time.Duration{maxDelay, maxDelay + quiet, maxDelay + 2*quiet, maxDelay + 3*quiet}
	for i := range want {
		if attempts[i] != want[i] {
			t.Fatalf("attempts at %v, want %v", attempts, want)
		}
	}
}

// stop ends the loop's context and answers the flushes it makes on the
// way out with results; it returns how many there were.
func (h *debounceHarness) stop(results ...bool) int {
	h.t.Helper()
	h.cancel()
	n := 0
	for {
		select {
		case <-h.flushes:
			if h.flushErr != nil {
				h.t.Fatalf("final flush %d ran with an ended context: %v", n+1, h.flushErr)
			}
			if n >= len(results) {
				h.t.Fatalf("final flush %d, want %d", n+1, len(results))
			}
			h.results <- results[n]
			n++
		case <-h.done:
			return n
		case <-time.After(5 * time.Second):
			h.t.Fatal("debounce loop did not stop")
		}
	}
}

// When its context ends, the loop writes what is due before it returns
// (a controller that stops leaves files that describe what runs), and
// only then.
func TestDebounceFlushesWhatIsDueWhenStopped(t *testing.T) {
	const quiet, maxDelay = 50 * time.Millisecond, 300 * time.Millisecond
	for _, tc := range []struct {
		name    string
		pending func(h *debounceHarness)
		results []bool // what each final flush reports
		want    int    // final flushes
	}{
		{"nothing ever changed", func(*debounceHarness) {}, nil, 0},
		{"everything written", func(h *debounceHarness) {
			h.kick()
			h.advance(quiet, true)
		}, nil, 0},
		{"a change within the quiet period", func(h *debounceHarness) {
			h.kick()
			h.advance(quiet/2, true)
		}, []bool{true}, 1},
		{"a flush that found a change", func(h *debounceHarness) {
			h.kick()
			h.advance(quiet, false)
		}, []bool{true}, 1},
		{"final flush that finds a change is tried again", func(h *debounceHarness) {
			h.kick()
		}, []bool{false, true}, 2},
		{"final attempts are bounded", func(h *debounceHarness) {
			h.kick()
		}, []bool{false, false, false, false}, 3},
	} {
		t.Run(tc.name, func(t *testing.T) {
			h := newDebounceHarness(t, quiet, maxDelay)
			tc.pending(h)
			if got := h.stop(tc.results...); got != tc.want {
				t.Errorf("%d final flushes, want %d", got, tc.want)
			}
		})
	}
}

func TestPendingDue(t *testing.T) {
	const quiet, maxDelay = time.Second, 30 * time.Second
	t0 := time.Unix(1000, 0)
	at := func(s float64) time.Time { return t0.Add(time.Duration(s * float64(time.Second))) }
	for _, tc := range []struct {
		name string
		p    pending
		want time.Time
	}{
		{"single change", pending{first: at(0), last: at(0)}, at(1)},
		{"changes going on", pending{first: at(0), last: at(10)}, at(11)},
		{"capped by the maximum delay", pending{first: at(0), last: at(29.5)}, at(30)},
		{"overdue after a failed attempt", pending{first: at(0), last: at(31), retry: at(31)}, at(31)},
		{"overdue, changes going on", pending{first: at(0), last: at(31.5), retry: at(32)}, at(32)},
		{"retry before the cap", pending{first: at(0), last: at(5), retry: at(5)}, at(6)},
	} {
		if got := tc.p.due(quiet, maxDelay); !got.Equal(tc.want) {
			t.Errorf("%s: due at %s, want %s", tc.name, got.Sub(t0), tc.want.Sub(t0))
		}
	}
}
