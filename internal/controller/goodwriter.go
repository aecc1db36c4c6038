package controller

import (
	"context"
	"crypto/sha256"
	"errors"
	"log/slog"
	"sync"
	"time"

	"github.com/haproxy-k8s-sync/haproxy-k8s-sync/internal/settings"
)

// goodWriter writes the last good settings to their file off the pass's
// path. A pass hands it the map it computed after the driver applied
// (want); the writer's goroutine (run) writes the newest map handed to it,
// so passes that come faster than the writes share one. At 10,000
// Services the file is ~2.5 MB of JSON, 90-120 ms of encoding and fsync
// on this machine (BenchmarkLastGoodSave), which every pass that added a
// Service, the first pass of a start included, spent before its driver
// applied (issue 29). The file is a hint for the next start: a Service
// whose annotations turn invalid keeps the settings it had; a write
// that a crash cut short leaves the file of the pass before, which
// atomicfile keeps whole.
//
// After a write the writer waits lastGoodGap before the next: a burst of
// new Services at 10,000 otherwise wrote the file after every pass, a
// core's worth of encoding beside the passes (issue 29). A stop writes
// what is pending at once.
//
// A pass that adds or removes a few Services edits the memo's map in
// place (desired.Result.GoodEdited, issue 29: a copy of 10,000 entries
// was half of that pass's allocations). The writer therefore says when
// it reads a handed map (reading), which it starts only under guard (the
// controller holds it while a pass computes); the passes that run while
// it reads have the memo copy the map before they change it
// (desired.Memo.CopyGood). No copy is made otherwise (a copy at each
// write was 2.3 MB beside the first pass, when the controller's RSS
// peaks).
//
// The writer keeps no map of its own once it wrote one: it knows what
// the file holds by the hand-overs' generation (gen: a new map, or the
// same one edited in place), and holds only the newest map handed (the
// controller's own). Keeping the map it last wrote held, through every
// burst of new Services, a second 10,000-entry map (~4 MB at 10,000) the
// moment a pass had copied it (issue 29's whole-run peak). The file's
// contents are compared with what it held at start (loaded) until the
// first write, after that by the digest of the encoding last written
// (sum): a whole pass's new map with the same contents (a Service written
// again, its status) is encoded, not synced nor renamed.
type goodWriter struct {
	store lastGoodStore
	log   *slog.Logger
	kick  chan struct{} // one pending kick; want never blocks
	gap   time.Duration
	after func(time.Duration) <-chan time.Time // time.After; tests wait on their own

	// guard is held (shared) while the writer starts reading a handed
	// map; the controller holds it exclusively while a pass may edit one.
	// nil: the maps handed are never edited (tests).
	guard sync.Locker

	mu         sync.Mutex
	last       map[string]*settings.Settings // the newest map handed (the controller's; written or pending)
	gen        uint64                        // hand-overs that changed the map: a new map, or last edited
	has        bool                          // a map was handed since the last flush
	writtenGen uint64                        // gen of the map last written (or found in the file)
	known      bool                          // writtenGen says what the file holds
	file       map[string]*settings.Settings // what the file held at start, until the first write (loaded)
	sum        *[sha256.Size]byte            // the digest of the last write's encoding (nil: none yet)
	busy       bool                          // reading a handed map: passes must not edit it
}

// reading reports whether the writer reads a handed map: a pass that
// starts meanwhile must not edit the last one in place.
func (w *goodWriter) reading() bool {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.busy
}

func newGoodWriter(store lastGoodStore, log *slog.Logger) *goodWriter {
	return &goodWriter{store: store, log: log, kick: make(chan struct{}, 1), gap: lastGoodGap, after: time.After}
}

// lastGoodGap is the least time between two writes of the last good
// settings.
const lastGoodGap = 2 * time.Second

// loaded records what the file held at start (lastGoodStore.load), so
// that a first pass with the same settings writes nothing.
func (w *goodWriter) loaded(m map[string]*settings.Settings) {
	w.mu.Lock()
	w.file = m
	w.mu.Unlock()
}

// want hands the writer m, the settings of the pass that just applied;
// edited says the pass edited the map in place (desired.Result.GoodEdited).
// It returns at once.
func (w *goodWriter) want(m map[string]*settings.Settings, edited bool) {
	w.mu.Lock()
	if edited || !sameMap(w.last, m) {
		w.gen++
	}
	w.last, w.has = m, true
	w.mu.Unlock()
	select {
	case w.kick <- struct{}{}:
	default: // a kick is pending: its flush takes the newest map
	}
}

// run writes what want hands it until ctx ends, then writes what is
// still pending and returns.
func (w *goodWriter) run(ctx context.Context) {
	for {
		select {
		case <-ctx.Done():
			w.flush()
			return
		case <-w.kick:
		}
		if !w.flush() || w.gap <= 0 {
			continue
		}
		select {
		case <-ctx.Done():
			w.flush()
			return
		case <-w.after(w.gap):
		}
	}
}

// flush writes the newest map handed if the file may not hold it, and
// says whether it tried. A failed write is logged; the next pass that
// changes a setting writes again.
func (w *goodWriter) flush() bool {
	w.mu.Lock()
	m, gen, has, file := w.last, w.gen, w.has, w.file
	unchanged := w.known && gen == w.writtenGen
	w.has = false
	w.mu.Unlock()
	if !has || unchanged {
		return false
	}
	// Reading starts while no pass computes; the passes after copy.
	if w.guard != nil {
		w.guard.Lock()
	}
	w.mu.Lock()
	w.busy = true
	w.mu.Unlock()
	if w.guard != nil {
		w.guard.Unlock()
	}
	defer func() {
		w.mu.Lock()
		w.busy = false
		w.mu.Unlock()
	}()
	same := file != nil && settings.EqualMaps(file, m)
	if !same {
		sum, err := w.store.writeUnless(m, w.sum)
		same = errors.Is(err, errSameContents)
		if err != nil && !same {
			w.log.Warn("could not save last good settings", "err", err)
			return true
		}
		w.sum = &sum
	}
	w.mu.Lock()
	w.writtenGen, w.known, w.file = gen, true, nil
	w.mu.Unlock()
	return !same
}
