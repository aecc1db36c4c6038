package gcstat

import (
	"math"
	"runtime"
	"testing"
	"time"
)

// TestSince: the deltas of two samples, from the histogram's buckets.
func TestSince(t *testing.T) {
	bounds := []float64{0, 0.001, 0.01, math.Inf(1)}
	tests := []struct {
		name       string
		prev, next Sample
		want       Delta
	}{
		{"nothing happened", Sample{cycles: 3, allocs: 10, pause: pauseSum([]uint64{1, 0, 0}, bounds)},
			Sample{cycles: 3, allocs: 10, pause: pauseSum([]uint64{1, 0, 0}, bounds)}, Delta{}},
		{"one cycle, a pause under 1 ms", Sample{cycles: 3, allocs: 10, pause: pauseSum([]uint64{1, 0, 0}, bounds), assist: 0.5},
			Sample{cycles: 4, allocs: 4106, pause: pauseSum([]uint64{2, 0, 0}, bounds), assist: 0.502},
			Delta{Cycles: 1, Alloc: 4096, Pause: time.Millisecond, Assist: 2 * time.Millisecond}},
		{"two pauses, one past the last bound (counted at its lower)", Sample{pause: pauseSum([]uint64{0, 0, 0}, bounds)},
			Sample{cycles: 2, pause: pauseSum([]uint64{0, 1, 1}, bounds)}, Delta{Cycles: 2, Pause: 20 * time.Millisecond}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if got := tc.next.Since(tc.prev); got != tc.want {
				t.Errorf("got %+v, want %+v", got, tc.want)
			}
		})
	}
}

var sink []byte

// TestRead: a collection and an allocation between two reads are seen.
func TestRead(t *testing.T) {
	before := Read()
	sink = make([]byte, 1<<20)
	runtime.GC()
	d := Read().Since(before)
	if d.Cycles < 1 || d.Alloc < 1<<20 || d.Pause <= 0 {
		t.Errorf("after 1 MiB allocated and runtime.GC: %+v, want a cycle, >= 1 MiB, a pause", d)
	}
}

// TestReadAllocatesNothing: a pass reads the counters twice for its log
// line; the reads allocate nothing (issue 29: the histogram made anew
// each read was ~8.5 KB of an endpoint pass's allocation).
func TestReadAllocatesNothing(t *testing.T) {
	Read() // the pool's first arguments
	if n := testing.AllocsPerRun(100, func() { Read() }); n != 0 {
		t.Errorf("Read allocates %v times, want 0", n)
	}
}
