package memlimit

import (
	"bytes"
	"context"
	"log/slog"
	"math"
	"runtime"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

const mib = 1 << 20

func TestModelFor(t *testing.T) {
	m := Model{Floor: 64 * mib, Base: 24 * mib, PerService: 4096, PerEndpoint: 256, RoomPercent: 10, Beside: 14 * mib}
	for _, tc := range []struct {
		name string
		size Size
		live uint64
		want int64
	}{
		{"empty: the floor", Size{}, 0, 64 * mib},
		{"small: the floor", Size{Services: 100, Endpoints: 500}, 10 * mib, 64 * mib},
		{"10,000 x 5: predicted", Size{Services: 10000, Endpoints: 50000}, 0, 24*mib + 4096*10000 + 256*50000},
		{"20,000 x 5: follows the cluster", Size{Services: 20000, Endpoints: 100000}, 0, 24*mib + 4096*20000 + 256*100000},
		// More live heap than the counts predict (a shape the model does
		// not know: Cluster policy, many ports): never below its need.
		{"live heap above the prediction", Size{Services: 10000, Endpoints: 50000}, 100 * mib, 110*mib + 14*mib},
		{"live heap below the prediction", Size{Services: 10000, Endpoints: 50000}, 40 * mib, 24*mib + 4096*10000 + 256*50000},
		{"negative counts count nothing", Size{Services: -5, Endpoints: -1}, 0, 64 * mib},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := m.For(tc.size, tc.live); got != tc.want {
				t.Errorf("For(%+v, %d) = %d (%.1f MiB), want %d (%.1f MiB)", tc.size, tc.live, got, float64(got)/mib, tc.want, float64(tc.want)/mib)
			}
		})
	}
}

// The default model's limit at the benchmarks' 10,000 Services with 5
// endpoints each is what the runs measured (BENCHMARKS.md, issue 29), and
// it grows with the cluster: doubled, the part above Base doubles.
func TestDefaultAtScale(t *testing.T) {
	at := func(n int) int64 { return Default.For(Size{Services: n, Endpoints: 5 * n}, 0) }
	if got := at(10000); got < 85*mib || got > 87*mib {
		t.Errorf("10,000 Services: %.1f MiB, want 85-87", float64(got)/mib)
	}
	if got, want := at(20000)-Default.Base, 2*(at(10000)-Default.Base); got != want {
		t.Errorf("20,000 Services: %d above Base, want %d", got, want)
	}
	if got := at(0); got != Default.Floor {
		t.Errorf("no Services: %d, want the floor %d", got, Default.Floor)
	}
}

// A nil Tuner (no --memory-limit=auto, or GOMEMLIMIT set: internal/cli)
// sets nothing.
func TestNilTunerSetsNothing(t *testing.T) {
	var tu *Tuner
	if got := tu.Follow(Size{Services: 10000}); got != 0 {
		t.Fatalf("a nil Tuner set %d", got)
	}
	tu.Watch(context.Background())
}

func TestTunerFollows(t *testing.T) {
	var buf bytes.Buffer
	var set []int64
	live := uint64(0)
	tu := New(Model{Floor: 64 * mib, Base: 24 * mib, PerService: 4096, PerEndpoint: 256, RoomPercent: 10, Beside: 14 * mib},
		slog.New(slog.NewTextHandler(&buf, nil)))
	tu.set = func(v int64) int64 { set = append(set, v); return 0 }
	tu.live = func() uint64 { return live }

	first := tu.Follow(Size{Services: 10000, Endpoints: 50000}) // before the first pass: the counts alone
	if len(set) != 1 || set[0] != first {
		t.Fatalf("set %v, returned %d", set, first)
	}
	tu.Follow(Size{Services: 10000, Endpoints: 50000})
	if len(set) != 1 {
		t.Fatalf("the same limit set again: %v", set)
	}
	tu.Follow(Size{Services: 10001, Endpoints: 50005}) // one more Service: set, not logged
	if len(set) != 2 || set[1] <= first {
		t.Fatalf("one more Service: %v", set)
	}
	if n := strings.Count(buf.String(), "memory limit follows"); n != 1 {
		t.Fatalf("%d log lines after a small change, want 1:\n%s", n, buf.String())
	}
	live = 200 * mib // the live heap outgrew the prediction: room over it
	if got := tu.Follow(Size{Services: 10001, Endpoints: 50005}); got != 220*mib+14*mib {
		t.Fatalf("live 200 MiB: limit %d", got)
	}
	if n := strings.Count(buf.String(), "memory limit follows"); n != 2 {
		t.Fatalf("%d log lines after a large change, want 2:\n%s", n, buf.String())
	}
}

// runtimeLimit stands in for the runtime's limit: v (with -1 read, not
// set), its sets recorded.
type runtimeLimit struct {
	mu  sync.Mutex
	v   int64
	set []int64
}

func (r *runtimeLimit) SetMemoryLimit(v int64) int64 {
	r.mu.Lock()
	defer r.mu.Unlock()
	old := r.v
	if v >= 0 {
		r.v = v
		r.set = append(r.set, v)
	}
	return old
}

func (r *runtimeLimit) now() (int64, []int64) {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.v, slices.Clone(r.set)
}

// The limit in force when the Tuner is made (the operator's GOMEMLIMIT)
// bounds every limit it sets, the prediction's and the live heap's need
// alike; with none in force (math.MaxInt64) the prediction stands.
func TestTunerUnderTheOperators(t *testing.T) {
	m := Model{Floor: 64 * mib, Base: 24 * mib, PerService: 4096, PerEndpoint: 256, RoomPercent: 10, Beside: 14 * mib}
	live := uint64(0)
	liveNow := func() uint64 { return live }
	none := &runtimeLimit{v: math.MaxInt64}
	predicted := int64(24*mib + 4096*10000 + 256*50000)
	if got := newTuner(m, none.SetMemoryLimit, liveNow, slog.New(slog.DiscardHandler)).Follow(Size{Services: 10000, Endpoints: 50000}); got != predicted {
		t.Fatalf("no ceiling: %d, want the prediction %d", got, predicted)
	}
	r := &runtimeLimit{v: 70 * mib}
	tu := newTuner(m, r.SetMemoryLimit, liveNow, slog.New(slog.DiscardHandler))
	for _, l := range []uint64{0, 200 * mib} {
		live = l
		if got := tu.Follow(Size{Services: 10000, Endpoints: 50000}); got != 70*mib {
			t.Errorf("live %d MiB under 70 MiB: limit %d", l/mib, got)
		}
	}
	live = 0
	if got := tu.Follow(Size{Services: 10, Endpoints: 50}); got != 64*mib {
		t.Errorf("a small cluster under 70 MiB: %d, want the floor", got)
	}
	if v, set := r.now(); v != 64*mib {
		t.Errorf("the runtime's limit %d, set %v", v, set)
	}
}

// Stop puts back the limit in force when the Tuner was made, once, and
// nothing is set after it: neither by a pass nor after a collection.
func TestTunerStopPutsBack(t *testing.T) {
	r := &runtimeLimit{v: 512 * mib} // the operator's, before the Tuner
	var live atomic.Uint64
	tu := newTuner(Model{Floor: 64 * mib, Base: 24 * mib, PerService: 4096, RoomPercent: 10, Beside: 14 * mib},
		r.SetMemoryLimit, live.Load, slog.New(slog.DiscardHandler))
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	tu.Watch(ctx)
	tu.Follow(Size{Services: 10000})
	tu.Follow(Size{Services: 20000})
	tu.Stop()
	tu.Stop()
	if v, set := r.now(); v != 512*mib || len(set) != 3 {
		t.Fatalf("after Stop: the limit %d MiB, set %v; want 512 MiB back, set three times", v/mib, set)
	}
	if got := tu.Follow(Size{Services: 30000}); got != 0 {
		t.Errorf("Follow after Stop returned %d", got)
	}
	live.Store(400 * mib) // a collection would raise it, were it not stopped
	for range 3 {
		runtime.GC()
	}
	if v, set := r.now(); v != 512*mib || len(set) != 3 {
		t.Errorf("after Stop, a pass and collections: the limit %d MiB, set %v", v/mib, set)
	}
	var none *Tuner
	none.Stop()
}

// liveHeap reads the runtime's live heap (something after any collection).
func TestLiveHeapReads(t *testing.T) {
	keep := make([]byte, 4*mib)
	runtime.GC()
	if got := liveHeap(); got < 4*mib {
		t.Fatalf("live heap %d bytes with 4 MiB kept", got)
	}
	runtime.KeepAlive(keep)
}

// Watch raises the limit after a collection that found the live heap
// above the prediction's room, without waiting for the next pass.
func TestWatchRaisesAfterACollection(t *testing.T) {
	var mu sync.Mutex
	var last int64
	var live atomic.Uint64
	tu := New(Model{Floor: 64 * mib, Base: 24 * mib, PerService: 4096, RoomPercent: 10, Beside: 14 * mib}, slog.New(slog.DiscardHandler))
	tu.set = func(v int64) int64 { mu.Lock(); last = v; mu.Unlock(); return 0 }
	tu.live = live.Load
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	tu.Watch(ctx)
	predicted := tu.Follow(Size{Services: 10000})
	deadline := time.Now().Add(10 * time.Second)
	// untilSet collects until the cleanup (its own goroutine) set want,
	// polled with a deadline.
	untilSet := func(want int64, what string) {
		for {
			runtime.GC()
			mu.Lock()
			got := last
			mu.Unlock()
			if got == want {
				return
			}
			if time.Now().After(deadline) {
				t.Fatalf("%s: limit %d after collections, want %d", what, got, want)
			}
			time.Sleep(time.Millisecond)
		}
	}
	live.Store(200 * mib)
	untilSet(220*mib+14*mib, "the first pass of a heavier cluster")
	live.Store(10 * mib)
	untilSet(predicted, "the live heap fell: back to the prediction")
}
