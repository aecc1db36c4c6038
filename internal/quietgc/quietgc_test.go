package quietgc

import (
	"log/slog"
	"runtime"
	"testing"
	"time"
)

func TestDue(t *testing.T) {
	const mb = 1 << 20
	for _, tc := range []struct {
		name string
		h    Heap
		want bool
	}{
		{"a quarter of the room used", Heap{Live: 60 * mb, Goal: 76 * mb, InUse: 64 * mb}, true},
		{"half of it", Heap{Live: 60 * mb, Goal: 76 * mb, InUse: 68 * mb}, true},
		{"less than a quarter", Heap{Live: 60 * mb, Goal: 76 * mb, InUse: 63 * mb}, false},
		{"nothing allocated since", Heap{Live: 60 * mb, Goal: 76 * mb, InUse: 60 * mb}, false},
		{"less in use than live (swept)", Heap{Live: 60 * mb, Goal: 76 * mb, InUse: 50 * mb}, false},
		{"no room (a limit at the live heap)", Heap{Live: 60 * mb, Goal: 60 * mb, InUse: 70 * mb}, false},
		{"nothing known", Heap{}, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := Due(tc.h, DefaultShare); got != tc.want {
				t.Errorf("Due(%+v) = %v, want %v", tc.h, got, tc.want)
			}
		})
	}
}

// timers is the Collector's time.AfterFunc in the tests: the test fires
// the callbacks itself, in order, so that what happens in the quiet
// moment does not depend on the machine's speed.
type timers struct {
	armed []func()
	live  []bool
}

func (ts *timers) after(d time.Duration, f func()) func() bool {
	i := len(ts.armed)
	ts.armed, ts.live = append(ts.armed, f), append(ts.live, true)
	return func() bool {
		was := ts.live[i]
		ts.live[i] = false
		return was
	}
}

// fire runs timer i's callback as time.AfterFunc would, unless stopped.
func (ts *timers) fire(t *testing.T, i int) {
	t.Helper()
	if i >= len(ts.armed) {
		t.Fatalf("timer %d was never armed (%d armed)", i, len(ts.armed))
	}
	if ts.live[i] {
		ts.live[i] = false
		ts.armed[i]()
	}
}

func testCollector(heap *Heap) (*Collector, *timers, *int) {
	ts := &timers{}
	n := new(int)
	c := &Collector{quiet: DefaultQuiet, share: DefaultShare, read: func() Heap { return *heap },
		gc: func() { *n++ }, after: ts.after, log: slog.New(slog.DiscardHandler)}
	return c, ts, n
}

// TestCollectsInTheQuiet: a pass that used a quarter of the room is
// followed by a collection once the quiet moment after it passed; one
// that used less, or a quiet moment cut by the next pass, is not.
func TestCollectsInTheQuiet(t *testing.T) {
	due := Heap{Live: 60 << 20, Goal: 76 << 20, InUse: 68 << 20}
	t.Run("quiet after a pass that allocated", func(t *testing.T) {
		h := due
		c, ts, n := testCollector(&h)
		c.PassStarted()
		c.PassEnded()
		if *n != 0 {
			t.Fatalf("%d collections before the quiet moment passed", *n)
		}
		ts.fire(t, 0)
		if *n != 1 || c.Collected() != 1 {
			t.Fatalf("%d collections (Collected %d), want 1", *n, c.Collected())
		}
	})
	t.Run("the next pass began in the quiet moment", func(t *testing.T) {
		h := due
		c, ts, n := testCollector(&h)
		c.PassStarted()
		c.PassEnded()
		c.PassStarted() // the object's pass, then its EndpointSlice's
		ts.fire(t, 0)   // stopped: nothing
		if *n != 0 {
			t.Fatalf("%d collections while a pass ran, want 0", *n)
		}
		c.PassEnded()
		ts.fire(t, 1)
		if *n != 1 {
			t.Fatalf("%d collections after the second pass's quiet moment, want 1", *n)
		}
	})
	t.Run("a timer that fires late, a pass running", func(t *testing.T) {
		// time.AfterFunc's callback may already run when Stop is called.
		h := due
		c, ts, n := testCollector(&h)
		c.PassStarted()
		c.PassEnded()
		f := ts.armed[0]
		c.PassStarted()
		f() // fires anyway
		if *n != 0 {
			t.Fatalf("%d collections while a pass ran, want 0", *n)
		}
		c.PassEnded()
		f() // the older pass's timer: a pass began since
		if *n != 0 {
			t.Fatalf("%d collections on an older pass's timer, want 0", *n)
		}
	})
	t.Run("a pass that allocated little", func(t *testing.T) {
		h := Heap{Live: 60 << 20, Goal: 76 << 20, InUse: 61 << 20}
		c, ts, n := testCollector(&h)
		c.PassStarted()
		c.PassEnded()
		ts.fire(t, 0)
		if *n != 0 {
			t.Fatalf("%d collections, want 0: the runtime's pacing is left alone", *n)
		}
	})
}

// TestReadHeap: the runtime's metrics are read, and a collection found
// the live heap under its goal.
func TestReadHeap(t *testing.T) {
	runtime.GC()
	h := ReadHeap()
	if h.Live == 0 || h.Goal <= h.Live || h.InUse == 0 {
		t.Fatalf("heap %+v: want a live heap below its goal, and objects in use", h)
	}
}
