// Package memlimit sets Go's soft memory limit from the size of the
// cluster the controller serves (`run`'s default in the Services mode,
// `--memory-limit=auto`; issue 29: the controller's peak RSS at 10,000
// Services). GOGC=25 lets the heap grow a quarter over the live heap the
// last collection found; while passes come back to back (a burst of new
// Services) a collection marks what the running pass holds too, and the
// goal rose with it: that was the whole run's peak. A soft limit caps the
// heap there, but a fixed one cannot serve every cluster: near the live
// heap of 10,000 Services it would make the collector run all the time at
// 20,000. So the limit is predicted from what the caches hold (Services
// and endpoints counted before each pass, the first included) and never
// set below what the live heap, as last measured, needs with room to
// spare, nor above the operator's GOMEMLIMIT (Tuner.before). It is a
// trade: too near the live heap the collector runs in every pass and a
// pass waits for it (BENCHMARKS.md, issue 29).
package memlimit

import (
	"context"
	"log/slog"
	"math"
	"runtime"
	"runtime/debug"
	"runtime/metrics"
	"sync"
)

// Size is what the caches hold.
type Size struct {
	Services  int // Services listed (ours or not: the caches hold them all)
	Endpoints int // endpoints of the EndpointSlices listed
}

// Model is how much memory the Go runtime may hold for a cluster of a
// size. The values are fitted to measured runs (BENCHMARKS.md, issue 29).
type Model struct {
	Floor       int64 // never below: a small cluster's limit stays out of the collector's way
	Base        int64 // the process at no Services (package inits, client-go, runtime)
	PerService  int64 // a Service's share at the first pass's highest live heap, with its spare
	PerEndpoint int64 // an endpoint's (its server, slot and runtime state)
	RoomPercent int64 // over the live heap measured: the limit is never below live*(100+RoomPercent)/100+Beside
	Beside      int64 // the runtime's memory beside the live heap (stacks, metadata, spans' rest)
}

// Default is the model `run` uses in the Services mode: at 10,000
// Services with 5 endpoints each, 86 MiB. There a new Service's pass
// (~7 MB) still finds the room it needs over the ~57 MB live heap, so
// it meets no collection of its own (p50 15-19 ms, as with no limit),
// and a burst's passes, back to back, no longer raise the heap's goal
// from what they hold while a collection marks (the peak 96-99 MiB
// against 108-112 with none; at 80 MiB a new Service's p50 was 37-39 ms:
// BENCHMARKS.md, issue 29).
var Default = Model{
	Floor:       64 << 20,
	Base:        25 << 20,
	PerService:  5120,
	PerEndpoint: 256,
	RoomPercent: 10,
	Beside:      14 << 20,
}

// For is the limit for a cluster of size s whose live heap, as last
// measured, is live bytes.
func (m Model) For(s Size, live uint64) int64 {
	want := m.Base + m.PerService*int64(max(s.Services, 0)) + m.PerEndpoint*int64(max(s.Endpoints, 0))
	l := int64(min(live, math.MaxInt64/256)) // no overflow below
	need := l + l*m.RoomPercent/100 + m.Beside
	return max(m.Floor, want, need)
}

// Tuner applies a Model before each pass. A nil Tuner does nothing
// (--memory-limit given a quantity or 0, or GOMEMLIMIT=off: internal/cli).
type Tuner struct {
	model  Model
	set    func(int64) int64 // debug.SetMemoryLimit
	live   func() uint64     // the live heap as of the last collection
	log    *slog.Logger
	mu     sync.Mutex // Follow, and Watch's check after each collection
	size   Size       // the caches' size at the last Follow
	limit  int64      // what it set last; 0 before the first
	logged int64      // the limit last logged
	// before is the limit in force when the Tuner was made (the
	// operator's GOMEMLIMIT, often the container's memory limit, or
	// none): never exceeded, since the model's limit is the working
	// point below the operator's bound and a cluster whose model asks
	// more gets the operator's; and put back by Stop.
	before  int64
	stopped bool // Stop was called: nothing set after it
}

// New is a Tuner of model m, below the runtime's limit now (GOMEMLIMIT's).
func New(m Model, log *slog.Logger) *Tuner {
	return newTuner(m, debug.SetMemoryLimit, liveHeap, log)
}

// newTuner is New with the runtime's setter and live heap given (tests).
func newTuner(m Model, set func(int64) int64, live func() uint64, log *slog.Logger) *Tuner {
	return &Tuner{model: m, set: set, live: live, log: log, before: set(-1)}
}

// Follow sets the limit for a cluster of size s (before a pass: the
// first pass's is set from the caches alone). It returns the limit in
// force; 0 from a nil Tuner.
func (t *Tuner) Follow(s Size) int64 {
	if t == nil {
		return 0
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	t.size = s
	if t.stopped {
		return 0
	}
	return t.apply()
}

// Stop puts back the limit that was in force when t was made,
// and t sets none after it: the process may outlive the controller's
// run (tests run several in one process), and a limit fitted to caches
// that are gone would make the collector run flat out against whatever
// the process holds next. Nil: nothing.
func (t *Tuner) Stop() {
	if t == nil {
		return
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.limit != 0 && !t.stopped {
		t.set(t.before)
	}
	t.stopped = true
}

// Watch checks the limit after every collection until ctx ends: a live
// heap that outgrew the prediction (a cluster whose Services cost more
// than the model's: many ports, servers on every node) raises it within
// one collection, so the collector never runs flat out against a limit
// below what is live; and a limit raised so comes back down once the
// live heap does. On a nil Tuner it does nothing.
func (t *Tuner) Watch(ctx context.Context) {
	if t == nil || ctx.Err() != nil {
		return
	}
	// An object of its own (not the tiny allocator's, which shares a
	// block), unreachable at once: its cleanup runs after the next
	// collection, and arms the next.
	runtime.AddCleanup(&struct{ _ [32]byte }{}, func(ctx context.Context) {
		if ctx.Err() != nil {
			return
		}
		t.mu.Lock()
		if t.limit != 0 && !t.stopped { // before the first Follow the caches' size is unknown
			t.apply()
		}
		t.mu.Unlock()
		t.Watch(ctx)
	}, ctx)
}

// apply sets the limit for t.size and the live heap now; t.mu held.
func (t *Tuner) apply() int64 {
	s, live := t.size, t.live()
	limit := min(t.model.For(s, live), t.before)
	if limit != t.limit {
		t.set(limit)
		t.limit = limit
	}
	// Logged when it moved by an eighth since last logged: a pass that
	// adds a Service moves it by a few KiB.
	if d := limit - t.logged; d > t.logged/8 || -d > t.logged/8 {
		t.logged = limit
		t.log.Info("memory limit follows the cluster", "services", s.Services, "endpoints", s.Endpoints,
			"limit_mib", limit>>20, "live_heap_mib", live>>20)
	}
	return limit
}

// liveHeap is the heap marked live by the last collection (0 before it).
func liveHeap() uint64 {
	s := []metrics.Sample{{Name: "/gc/heap/live:bytes"}}
	metrics.Read(s)
	if s[0].Value.Kind() != metrics.KindUint64 {
		return 0
	}
	return s[0].Value.Uint64()
}
