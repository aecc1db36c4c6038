// Package gcstat reads what the Go runtime spent on garbage collection and
// allocation between two points of a pass (runtime/metrics), so a slow
// pass can say whether a collection ran in it, how long the world was
// stopped, and how much the pass itself was made to assist.
package gcstat

import (
	"math"
	"runtime/metrics"
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
	pauses []uint64 // the stop-the-world pause histogram's counts
	bounds []float64
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

// Read samples the counters now (a few microseconds).
func Read() Sample {
	s := []metrics.Sample{{Name: cyclesName}, {Name: allocsName}, {Name: pausesName}, {Name: assistName}}
	metrics.Read(s)
	var out Sample
	if s[0].Value.Kind() == metrics.KindUint64 {
		out.cycles = s[0].Value.Uint64()
	}
	if s[1].Value.Kind() == metrics.KindUint64 {
		out.allocs = s[1].Value.Uint64()
	}
	if s[2].Value.Kind() == metrics.KindFloat64Histogram {
		h := s[2].Value.Float64Histogram()
		out.pauses, out.bounds = h.Counts, h.Buckets
	}
	if s[3].Value.Kind() == metrics.KindFloat64 {
		out.assist = s[3].Value.Float64()
	}
	return out
}

// Since is what happened from prev to s.
func (s Sample) Since(prev Sample) Delta {
	d := Delta{Cycles: int(s.cycles - prev.cycles), Alloc: s.allocs - prev.allocs,
		Assist: seconds(s.assist - prev.assist)}
	var pause float64
	for i, n := range s.pauses {
		if i < len(prev.pauses) {
			n -= prev.pauses[i]
		}
		if n == 0 || i+1 >= len(s.bounds) {
			continue
		}
		upper := s.bounds[i+1]
		if math.IsInf(upper, 1) {
			upper = s.bounds[i]
		}
		pause += float64(n) * upper
	}
	d.Pause = seconds(pause)
	return d
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
