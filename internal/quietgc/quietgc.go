// Package quietgc collects the controller's garbage in its quiet moments:
// once a pass ended and no other began for a short while, it runs a
// collection if the next pass, allocating as much as the largest of the
// last few, would start one itself (issue 29).
//
// At 10,000 Services a new Service's pass allocates ~7 MB (whole copies
// of the frontends, the pool's view and its file) against ~15 MB of room
// (GOGC=25 over a ~60 MB live heap), so every second new Service met a
// collection in its own pass: its mark assists and the background
// worker's share of the two cores were 10-40 ms of its latency. A
// collection in the quiet moment after a pass costs the same CPU, on
// nothing that waits, and the next change finds the room empty. Light
// passes (an endpoint's, ~0.25 MB) are collected as the runtime would,
// when the room is nearly used; passes that follow one another with no
// quiet moment between them (a burst, churn) are left to the runtime's
// own pacing.
//
// The Services mode has it; the Gateway mode does not: there, changes that
// came every 20-30 ms met the collection the last one's quiet moment
// started, and a new HTTPRoute at 5,000 was served later with it (p50
// 16-29 ms against 13-19; BENCHMARKS.md, issue 29).
package quietgc

import (
	"log/slog"
	"runtime"
	"runtime/metrics"
	"sync"
	"sync/atomic"
	"time"
)

const (
	// DefaultQuiet is how long no pass runs before the heap is looked at:
	// short, so that the collection (30-70 ms at 10,000 Services) ends
	// before the next change comes. With 25 ms, a third of the new
	// Services in the bench met the end of the collection that the last
	// one's quiet moment started (new Service p50 17-21 ms; with 5 ms
	// 13 ms; BENCHMARKS.md, issue 29). An EndpointSlice that comes
	// within it after its Service's pass still finds it waiting.
	DefaultQuiet = 5 * time.Millisecond
	// Trigger is the share of the room between the live heap and the
	// goal past which the runtime may start a collection (its pacer
	// starts one between 70 % and 95 % of it): a pass expected to reach
	// it would meet a collection.
	Trigger = 0.7
	// passesKept is how many of the last passes' allocations the next
	// one is expected to repeat at most (a new Service's object and its
	// EndpointSlice are two passes, the heavier first).
	passesKept = 4
)

// Heap is what the runtime says of its heap.
type Heap struct {
	// Live: the heap the last collection found live.
	Live uint64
	// Goal: the heap size at which the runtime wants the next collection
	// to have ended.
	Goal uint64
	// InUse: the heap's objects now, live and not yet found dead.
	InUse uint64
}

// Due reports whether a pass that allocates next bytes, starting from h,
// would take the heap past Trigger of the room between the live heap and
// the goal.
func Due(h Heap, next uint64) bool {
	if h.Goal <= h.Live || h.InUse <= h.Live {
		return false // no room (a limit at the live heap), or nothing to collect
	}
	return float64(h.InUse-h.Live+next) >= Trigger*float64(h.Goal-h.Live)
}

// Collector watches the passes (PassStarted, PassEnded) and collects in
// the quiet after one. Safe for concurrent use.
type Collector struct {
	quiet time.Duration
	log   *slog.Logger
	read  func() Heap   // at a quiet moment
	alloc func() uint64 // at each pass's start and end: bytes allocated so far
	gc    func()
	after func(time.Duration, func()) func() bool // time.AfterFunc, and the timer's Stop

	mu      sync.Mutex
	gen     uint64 // passes started
	busy    bool   // a pass runs
	stop    func() bool
	started uint64             // alloc() when the running pass started
	allocs  [passesKept]uint64 // the last passes' allocations, in a ring
	n       int                // passes ended

	collecting atomic.Bool
}

// New is a Collector of the runtime's heap.
func New(log *slog.Logger) *Collector {
	return &Collector{quiet: DefaultQuiet, read: ReadHeap, alloc: readAllocated, gc: runtime.GC, after: afterFunc, log: log}
}

func afterFunc(d time.Duration, f func()) func() bool { return time.AfterFunc(d, f).Stop }

// PassStarted says a pass began: no collection starts until after it.
func (c *Collector) PassStarted() {
	a := c.alloc()
	c.mu.Lock()
	defer c.mu.Unlock()
	c.gen++
	c.busy = true
	c.started = a
	if c.stop != nil {
		c.stop()
	}
}

// PassEnded says the pass ended: if none begins within the quiet moment,
// the heap is looked at then.
func (c *Collector) PassEnded() {
	a := c.alloc()
	c.mu.Lock()
	defer c.mu.Unlock()
	c.busy = false
	if a >= c.started {
		c.allocs[c.n%passesKept] = a - c.started
		c.n++
	}
	gen := c.gen
	c.stop = c.after(c.quiet, func() { c.quietAfter(gen) })
}

// quietAfter collects, on the timer's goroutine, if no pass began since
// pass gen ended and the next pass is expected to meet a collection. One
// collection at a time.
func (c *Collector) quietAfter(gen uint64) {
	c.mu.Lock()
	quiet := !c.busy && c.gen == gen
	var next uint64
	for _, a := range c.allocs {
		next = max(next, a)
	}
	c.mu.Unlock()
	if !quiet {
		return
	}
	h := c.read()
	if !Due(h, next) || !c.collecting.CompareAndSwap(false, true) {
		return
	}
	defer c.collecting.Store(false)
	t0 := time.Now()
	c.gc()
	c.log.Debug("garbage collected in a quiet moment", "live_kib", h.Live>>10, "goal_kib", h.Goal>>10,
		"in_use_kib", h.InUse>>10, "next_pass_kib", next>>10, "took", time.Since(t0))
}

const (
	liveName   = "/gc/heap/live:bytes"
	goalName   = "/gc/heap/goal:bytes"
	inUseName  = "/memory/classes/heap/objects:bytes"
	allocsName = "/gc/heap/allocs:bytes"
)

// readAllocated reads the bytes allocated since the process started, the
// one metric a pass's start and end need (gcstat.Read reads it too, with
// the pause histogram beside it, for the pass's log line).
func readAllocated() uint64 {
	s := [1]metrics.Sample{{Name: allocsName}}
	metrics.Read(s[:])
	if s[0].Value.Kind() == metrics.KindUint64 {
		return s[0].Value.Uint64()
	}
	return 0
}

// ReadHeap reads the runtime's heap (runtime/metrics: nothing allocated).
func ReadHeap() Heap {
	s := [3]metrics.Sample{{Name: liveName}, {Name: goalName}, {Name: inUseName}}
	metrics.Read(s[:])
	u := func(i int) uint64 {
		if s[i].Value.Kind() == metrics.KindUint64 {
			return s[i].Value.Uint64()
		}
		return 0
	}
	return Heap{Live: u(0), Goal: u(1), InUse: u(2)}
}
