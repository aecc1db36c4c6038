package quietgc

import (
	"log/slog"
	"runtime"
	"testing"
	"time"
)

func TestDue(t *testing.T) {
	const mb = 1 << 20
	room := Heap{Live: 60 * mb, Goal: 76 * mb} // 16 MB of room; the runtime's trigger from 11.2 MB on
	for _, tc := range []struct {
		name  string
		inUse uint64
		next  uint64
		want  bool
	}{
		{"a new Service's pass would reach the trigger", 65 * mb, 7 * mb, true},
		{"it fits before the trigger", 61 * mb, 7 * mb, false},
		{"an endpoint's pass fits", 68 * mb, mb / 4, false},
		{"an endpoint's pass near the trigger", 71 * mb, mb / 4, true},
		{"past the trigger already", 72 * mb, 0, true},
		{"nothing allocated since", 60 * mb, 7 * mb, false},
		{"less in use than live (swept)", 50 * mb, 7 * mb, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			h := room
			h.InUse = tc.inUse
			if got := Due(h, tc.next); got != tc.want {
				t.Errorf("Due(%+v, %d) = %v, want %v", h, tc.next, got, tc.want)
			}
		})
	}
	if Due(Heap{Live: 60 * mb, Goal: 60 * mb, InUse: 70 * mb}, 7*mb) {
		t.Error("Due with no room (a limit at the live heap): the runtime's own business")
	}
	if Due(Heap{}, 0) {
		t.Error("Due with nothing known")
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

// heap is the runtime's heap as a test makes it, and the bytes allocated.
type heap struct {
	Heap
	allocated uint64
}

func testCollector(h *heap) (*Collector, *timers, *int) {
	ts := &timers{}
	n := new(int)
	c := &Collector{quiet: DefaultQuiet, read: func() Heap { return h.Heap }, alloc: func() uint64 { return h.allocated },
		gc: func() { *n++ }, after: ts.after, log: slog.New(slog.DiscardHandler)}
	return c, ts, n
}

// allocate allocates b bytes, all of it still in use.
func (h *heap) allocate(b uint64) {
	h.allocated += b
	h.InUse += b
}

// pass runs a pass that allocates b bytes.
func pass(c *Collector, h *heap, b uint64) {
	c.PassStarted()
	h.allocate(b)
	c.PassEnded()
}

// TestCollectsInTheQuiet: a collection follows the quiet moment after a
// pass when the next pass, as heavy as the heaviest of the last ones,
// would meet one; not while a pass runs, nor after light passes with room
// left.
func TestCollectsInTheQuiet(t *testing.T) {
	const mb = 1 << 20
	fresh := func() *heap { return &heap{Heap: Heap{Live: 60 * mb, Goal: 76 * mb, InUse: 60 * mb}} }
	t.Run("a new Service: its object's pass, then its slice's", func(t *testing.T) {
		h := fresh()
		c, ts, n := testCollector(h)
		pass(c, h, 7*mb)
		c.PassStarted() // the slice came during the object's pass
		ts.fire(t, 0)   // stopped: nothing
		h.allocate(mb / 4)
		c.PassEnded()
		if *n != 0 {
			t.Fatalf("%d collections before the quiet moment passed", *n)
		}
		ts.fire(t, 1)
		if *n != 1 {
			t.Fatalf("%d collections, want 1: another 7 MB pass would meet one", *n)
		}
	})
	t.Run("endpoints' passes, room left", func(t *testing.T) {
		h := fresh()
		c, ts, n := testCollector(h)
		for i := range 20 { // 5 MB of 16
			pass(c, h, mb/4)
			ts.fire(t, i)
		}
		if *n != 0 {
			t.Fatalf("%d collections, want 0: light passes are left to the runtime's pacing", *n)
		}
	})
	t.Run("a timer that fires late, a pass running", func(t *testing.T) {
		// time.AfterFunc's callback may already run when Stop is called.
		h := fresh()
		c, ts, n := testCollector(h)
		pass(c, h, 7*mb)
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
	t.Run("a heavy pass, then light ones: remembered", func(t *testing.T) {
		h := fresh()
		c, ts, n := testCollector(h)
		pass(c, h, 3*mb)
		ts.fire(t, 0) // 3 + 3 of 11.2: fits
		pass(c, h, mb/4)
		ts.fire(t, 1) // 3.25 + 3: fits
		if *n != 0 {
			t.Fatalf("%d collections, want 0 yet", *n)
		}
		pass(c, h, 5*mb)
		ts.fire(t, 2) // 8.25 + 5: would not fit
		if *n != 1 {
			t.Fatalf("%d collections, want 1", *n)
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

// sink keeps TestReadAllocated's allocation on the heap.
var sink []byte

// TestReadAllocated: the bytes allocated so far grow by what is allocated.
func TestReadAllocated(t *testing.T) {
	a0 := readAllocated()
	sink = make([]byte, 1<<20)
	if a1 := readAllocated(); a1 < a0+1<<20 {
		t.Fatalf("allocated %d then %d bytes across a 1 MiB allocation", a0, a1)
	}
}
