// Package quietgc collects the controller's garbage in its quiet moments:
// once a pass ended and no other began for a short while, and the heap
// has used a good share of the room the collector's target leaves above
// the live heap, it runs a collection then, instead of letting the next
// pass start it (issue 29).
//
// At 10,000 Services a new Service's pass allocates ~7 MB (whole copies
// of the frontends, the pool's view and its file) against ~15 MB of room
// (GOGC=25 over a ~60 MB live heap), so every second new Service met a
// collection in its own pass: its mark assists and the background
// worker's share of the two cores were 10-40 ms of its latency. A
// collection in the quiet moment after a pass costs the same CPU, on
// nothing that waits, and the next change finds the room empty. Passes
// that follow one another with no quiet moment between them (a burst,
// churn) are left to the runtime's own pacing.
package quietgc

import (
	"log/slog"
	"runtime"
	"runtime/metrics"
	"sync"
	"sync/atomic"
	"time"
)

// Defaults: the quiet moment, and the share of the room used that makes
// a collection worth it then.
const (
	DefaultQuiet = 25 * time.Millisecond
	DefaultShare = 0.25
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

// Due reports whether h has used at least share of the room between the
// live heap and the goal.
func Due(h Heap, share float64) bool {
	if h.Goal <= h.Live || h.InUse <= h.Live {
		return false
	}
	return float64(h.InUse-h.Live) >= share*float64(h.Goal-h.Live)
}

// Collector watches the passes (PassStarted, PassEnded) and collects in
// the quiet after one. Safe for concurrent use.
type Collector struct {
	quiet time.Duration
	share float64
	log   *slog.Logger
	read  func() Heap
	gc    func()
	after func(time.Duration, func()) func() bool // time.AfterFunc, and the timer's Stop

	mu   sync.Mutex
	gen  uint64 // passes started
	busy bool   // a pass runs
	stop func() bool

	collecting atomic.Bool
	collected  atomic.Int64
}

// New is a Collector of the runtime's heap with the defaults.
func New(log *slog.Logger) *Collector {
	return &Collector{quiet: DefaultQuiet, share: DefaultShare, read: ReadHeap, gc: runtime.GC, after: afterFunc, log: log}
}

func afterFunc(d time.Duration, f func()) func() bool { return time.AfterFunc(d, f).Stop }

// PassStarted says a pass began: no collection starts until after it.
func (c *Collector) PassStarted() {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.gen++
	c.busy = true
	if c.stop != nil {
		c.stop()
	}
}

// PassEnded says the pass ended: if none begins within the quiet moment,
// the heap is looked at then.
func (c *Collector) PassEnded() {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.busy = false
	gen := c.gen
	c.stop = c.after(c.quiet, func() { c.quietAfter(gen) })
}

// Collected is the number of collections c ran.
func (c *Collector) Collected() int64 { return c.collected.Load() }

// quietAfter collects, on the timer's goroutine, if no pass began since
// pass gen ended and the heap is Due. One collection at a time.
func (c *Collector) quietAfter(gen uint64) {
	c.mu.Lock()
	quiet := !c.busy && c.gen == gen
	c.mu.Unlock()
	if !quiet {
		return
	}
	h := c.read()
	if !Due(h, c.share) || !c.collecting.CompareAndSwap(false, true) {
		return
	}
	defer c.collecting.Store(false)
	t0 := time.Now()
	c.gc()
	c.collected.Add(1)
	c.log.Debug("garbage collected in a quiet moment", "live_kib", h.Live>>10, "goal_kib", h.Goal>>10,
		"in_use_kib", h.InUse>>10, "took", time.Since(t0))
}

const (
	liveName  = "/gc/heap/live:bytes"
	goalName  = "/gc/heap/goal:bytes"
	inUseName = "/memory/classes/heap/objects:bytes"
)

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
