package memlimit

import (
	"log/slog"
	"runtime/debug"
	"sync"
)

// StartRoomPercent is the start's room over the model's limit after
// plain first lists: a start holds no more than the model's limit and
// this share of it (issue 29: the start's peak stays below the whole
// run's). After streamed first lists a start holds the model's limit
// alone (HoldStart's streamed).
const StartRoomPercent = 25

// Start is the collector held for a start's first pass (issue 29: the
// initial sync at 10,000 Services). From the caches synced until the
// first pass applied the heap grows from the caches alone to the caches
// and the whole model; at GOGC=25 that growth was a collection every
// quarter of it, each marking the whole heap (the controller's part of
// the first pass: 165 ms of CPU at GOGC=25, 60 ms with no collection,
// BenchmarkFirstPass). A Start turns the proportional target off and
// bounds the heap by a soft limit instead: the model's limit for the
// caches' size (never below what the live heap needs) and
// StartRoomPercent of it, or the limit already in force when that is
// lower. End puts both back. A nil Start does nothing.
type Start struct {
	once       sync.Once
	percent    func(int) int     // debug.SetGCPercent
	setLimit   func(int64) int64 // debug.SetMemoryLimit
	prevGC     int
	prevLimit  int64
	limitOwned bool
}

// HoldStart holds the collector for the start of a cluster of size s
// (the live heap as of the last collection read here). With limit false the soft limit is left
// to whoever sets it (a Tuner, --memory-limit=auto, sets the model's
// before each pass) and only the proportional target is turned off.
// With streamed, the caches' first lists were streamed (each object
// slimmed as it arrived): the heap at sync holds no whole list response,
// so the model's limit (over the live heap at sync, Model.For) leaves
// the pass room enough and the start's RSS stays at it; after plain
// lists their garbage made the collector run against that limit all
// through the pass (issue 29, st29c's hold0), and StartRoomPercent is
// added. The operator's GOGC wins: with gogcSet nothing is held (nil).
func HoldStart(m Model, s Size, gogcSet, limit, streamed bool, log *slog.Logger) *Start {
	if gogcSet {
		return nil
	}
	return holdStart(m, s, liveHeap(), limit, streamed, debug.SetGCPercent, debug.SetMemoryLimit, log)
}

func holdStart(m Model, s Size, live uint64, limit, streamed bool, percent func(int) int, setLimit func(int64) int64, log *slog.Logger) *Start {
	st := &Start{percent: percent, setLimit: setLimit, limitOwned: limit}
	var held int64
	if limit {
		want := m.For(s, live)
		if !streamed {
			want += want / 100 * StartRoomPercent
		}
		st.prevLimit = setLimit(-1) // reads it
		held = min(want, st.prevLimit)
		setLimit(held)
	}
	st.prevGC = percent(-1) // off
	log.Info("collector held for the first pass", "limit_mib", held>>20, "services", s.Services, "endpoints", s.Endpoints,
		"live_heap_mib", live>>20, "streamed_lists", streamed)
	return st
}

// End puts back the collector's target and limit of before HoldStart.
// Once; later calls and a nil Start do nothing.
func (st *Start) End() {
	if st == nil {
		return
	}
	st.once.Do(func() {
		st.percent(st.prevGC)
		if st.limitOwned {
			st.setLimit(st.prevLimit)
		}
	})
}
