// Package gcstat reads what the Go runtime spent on garbage collection and
// allocation between two points of a pass (runtime/metrics), so a slow
// pass can say whether a collection ran in it, how long the world was
// stopped, and how much the pass itself was made to assist.
package gcstat

import (
	"math"
	"runtime/metrics"
	"sync"
	"time"
)

const (
	cyclesName = "/gc/cycles/total:gc-cycles"
	allocsName = "/gc/heap/allocs:bytes"
	pausesName = "/sched/pauses/total/gc:seconds"
	assistName = "/cpu/classes/gc/mark/assist:cpu-seconds"
)

// Sample is the runtime's counters at one moment.
type Sample struct {
	cycles uint64
	allocs uint64
	// pause: the stop-the-world pause histogram's counts, each at its
	// bucket's upper bound (the last, unbounded one at its lower), summed
	// in seconds: what Since subtracts, so a Sample keeps no copy of the
	// histogram (issue 29: ~8.5 KB of every pass's allocation).
	pause  float64
	assist float64
}

// Delta is what happened between two Samples.
type Delta struct {
	// Cycles: collections that ended in between.
	Cycles int
	// Alloc: bytes allocated on the heap in between (by every goroutine).
	Alloc uint64
	// Pause: the stop-the-world pauses for GC in between, each counted
	// at its histogram bucket's upper bound (an overestimate within the
	// bucket's width).
	Pause time.Duration
	// Assist: CPU time goroutines spent assisting the mark phase, as the
	// runtime accounts it at the end of each cycle.
	Assist time.Duration
}

// samples are metrics.Read's arguments, kept between reads: the runtime
// fills a histogram it was given again instead of making one.
var samples = sync.Pool{New: func() any {
	return &[4]metrics.Sample{{Name: cyclesName}, {Name: allocsName}, {Name: pausesName}, {Name: assistName}}
}}

// Read samples the counters now (a few microseconds; nothing allocated).
func Read() Sample {
	s := samples.Get().(*[4]metrics.Sample)
	defer samples.Put(s)
	metrics.Read(s[:])
	var out Sample
	if s[0].Value.Kind() == metrics.KindUint64 {
		out.cycles = s[0].Value.Uint64()
	}
	if s[1].Value.Kind() == metrics.KindUint64 {
		out.allocs = s[1].Value.Uint64()
	}
	if s[2].Value.Kind() == metrics.KindFloat64Histogram {
		h := s[2].Value.Float64Histogram()
		out.pause = pauseSum(h.Counts, h.Buckets)
	}
	if s[3].Value.Kind() == metrics.KindFloat64 {
		out.assist = s[3].Value.Float64()
	}
	return out
}

// pauseSum is the pauses of a histogram in seconds, each counted at its
// bucket's upper bound, the last (unbounded) bucket's at its lower.
func pauseSum(counts []uint64, bounds []float64) float64 {
	var sum float64
	for i, n := range counts {
		if n == 0 || i+1 >= len(bounds) {
			continue
		}
		upper := bounds[i+1]
		if math.IsInf(upper, 1) {
			upper = bounds[i]
		}
		sum += float64(n) * upper
	}
	return sum
}

// Since is what happened from prev to s.
func (s Sample) Since(prev Sample) Delta {
	return Delta{Cycles: int(s.cycles - prev.cycles), Alloc: s.allocs - prev.allocs,
		Pause: seconds(s.pause - prev.pause), Assist: seconds(s.assist - prev.assist)}
}

// Attrs are d as log attributes.
func (d Delta) Attrs() []any {
	return []any{"gcs", d.Cycles, "gc_pause", d.Pause, "gc_assist", d.Assist, "alloc", d.Alloc}
}

func seconds(s float64) time.Duration {
	if s <= 0 {
		return 0
	}
	return time.Duration(s * float64(time.Second))
}
