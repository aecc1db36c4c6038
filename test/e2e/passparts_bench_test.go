package e2e

import (
	"bufio"
	"encoding/json"
	"fmt"
	"os"
	"runtime"
	"strings"
	"testing"
	"time"
)

// passPart is one runtime pass's split from its JSON "update" line, where
// the gateway loop writes it (older code: found false): the snapshot,
// gateway.Compute, the Ingresses beside, the wait from the pass's first
// change (the controller's informer event) to its start, and the
// collections and allocation in it.
type passPart struct {
	start, end                                       time.Time
	snapshot, compute, beside, waited, pause, assist time.Duration
	gcs                                              int
	alloc                                            uint64
	found                                            bool
	// the Ingresses' parts (ingressctl): input read, compile, merge;
	// why the compile was whole ("" patched)
	input, compile, merge time.Duration
	whole                 string
}

// passParts are the passes with ops in log, in order.
func passParts(log string) []passPart {
	var out []passPart
	type line struct {
		passEnd
		Snapshot *time.Duration `json:"snapshot"`
		Compute  time.Duration  `json:"compute"`
		Beside   time.Duration  `json:"beside"`
		Waited   time.Duration  `json:"waited"`
		Pause    time.Duration  `json:"gc_pause"`
		Assist   time.Duration  `json:"gc_assist"`
		GCs      int            `json:"gcs"`
		Alloc    uint64         `json:"alloc"`
		Input    time.Duration  `json:"ingress_input"`
		Compile  time.Duration  `json:"ingress_compile"`
		Merge    time.Duration  `json:"ingress_merge"`
		Whole    string         `json:"ingress_whole"`
	}
	forPassLines(log, func(l line) {
		out = append(out, passPart{start: l.Time.Add(-l.Total), end: l.Time, snapshot: deref(l.Snapshot), compute: l.Compute,
			beside: l.Beside, waited: l.Waited, pause: l.Pause, assist: l.Assist, gcs: l.GCs, alloc: l.Alloc, found: l.Snapshot != nil,
			input: l.Input, compile: l.Compile, merge: l.Merge, whole: l.Whole})
	})
	return out
}

// passEnd is what every pass line says of its pass: when it ended and
// how long it took.
type passEnd struct {
	Time  time.Time     `json:"time"`
	Total time.Duration `json:"total"`
}

// forPassLines calls each with every "update" line of a pass with ops in
// log (--log-format json), in order, decoded into a T.
func forPassLines[T any](log string, each func(T)) {
	sc := bufio.NewScanner(strings.NewReader(log))
	sc.Buffer(make([]byte, 1<<20), 1<<24)
	for sc.Scan() {
		var head struct {
			Msg string `json:"msg"`
			Ops int    `json:"ops"`
		}
		if json.Unmarshal(sc.Bytes(), &head) != nil || head.Msg != "update" || head.Ops == 0 {
			continue
		}
		var l T
		if json.Unmarshal(sc.Bytes(), &l) == nil {
			each(l)
		}
	}
}

func deref(d *time.Duration) time.Duration {
	if d == nil {
		return 0
	}
	return *d
}

// deliveryBuckets are the upper bounds of the delivery histograms.
var deliveryBuckets = []time.Duration{5 * time.Millisecond, 10 * time.Millisecond, 20 * time.Millisecond,
	50 * time.Millisecond, 100 * time.Millisecond, 200 * time.Millisecond}

// histogram is d counted into deliveryBuckets, as text.
func histogram(d []time.Duration) string {
	counts := make([]int, len(deliveryBuckets)+1)
	for _, x := range d {
		i := 0
		for i < len(deliveryBuckets) && x > deliveryBuckets[i] {
			i++
		}
		counts[i]++
	}
	var parts []string
	for i, n := range counts {
		label := ">" + deliveryBuckets[len(deliveryBuckets)-1].String()
		if i < len(deliveryBuckets) {
			label = "<=" + deliveryBuckets[i].String()
		}
		parts = append(parts, fmt.Sprintf("%s:%d", label, n))
	}
	return strings.Join(parts, " ")
}

// reportPassParts logs, for kind's changes, where the time after the
// write went: the apiserver's delivery to the test's watch and to the
// controller's informer (histograms, the same write seen by both), the
// time from the controller's event to the first 200, the pass's parts,
// and every pass over 50 ms with its parts and collections. Reports the
// p99 from the controller's event as a metric: the part of a change
// that is ours.
func reportPassParts(b *testing.B, kind string, changes []change, parts []passPart) {
	b.Helper()
	var watch, informer, ours, snap, comp, beside []time.Duration
	var slow []string
	wholes := map[string]int{}
	for _, c := range changes {
		i := 0
		for i < len(parts) && parts[i].end.Before(c.written) {
			i++
		}
		if i == len(parts) || !parts[i].found {
			continue
		}
		p := parts[i]
		if !c.seen.IsZero() {
			watch = append(watch, c.seen.Sub(c.written))
		}
		if event := p.start.Add(-p.waited); p.waited > 0 && !event.Before(c.start) {
			informer = append(informer, event.Sub(c.written))
			ours = append(ours, c.served.Sub(event))
		}
		snap, comp, beside = append(snap, p.snapshot), append(comp, p.compute), append(beside, p.beside)
		if p.whole != "" {
			wholes[p.whole]++
		}
		if d := p.end.Sub(p.start); d > 50*time.Millisecond {
			r := func(d time.Duration) time.Duration { return d.Round(100 * time.Microsecond) }
			slow = append(slow, fmt.Sprintf("%s (snapshot %s, compute %s, beside %s [input %s, compile %s, merge %s, whole %q], gcs %d, pause %s, assist %s, alloc %d kB)",
				r(d), r(p.snapshot), r(p.compute), r(p.beside), r(p.input), r(p.compile), r(p.merge), p.whole,
				p.gcs, r(p.pause), r(p.assist), p.alloc>>10))
		}
	}
	if len(snap) == 0 {
		b.Logf("%s: no pass parts in the log (code without them)", kind)
		return
	}
	p := func(d []time.Duration) string {
		if len(d) == 0 {
			return "-"
		}
		r := func(q float64) string { return pct(d, q).Round(10 * time.Microsecond).String() }
		return r(0.5) + " / " + r(0.99) + " / " + r(1)
	}
	var total []time.Duration // the slowest change is what a p99 of 100 or more leaves out
	for _, c := range changes {
		total = append(total, c.served.Sub(c.start))
	}
	b.Logf("%s, write to first 200 (p50 / p99 / max): %s", kind, p(total))
	b.Logf("%s, parts (p50 / p99 / max): snapshot %s; gateway compute %s; Ingresses %s; write -> test's watch %s; write -> controller's event %s; controller's event -> first 200 %s",
		kind, p(snap), p(comp), p(beside), p(watch), p(informer), p(ours))
	b.Logf("%s, write -> test's watch:        %s", kind, histogram(watch))
	b.Logf("%s, write -> controller's event:  %s", kind, histogram(informer))
	b.Logf("%s, controller's event -> 200:    %s", kind, histogram(ours))
	b.Logf("%s, passes over 50 ms (%d): %s", kind, len(slow), strings.Join(slow, "; "))
	b.Logf("%s, whole Ingress compiles by reason: %v", kind, wholes)
	if len(ours) > 0 {
		b.ReportMetric(float64(pct(ours, 0.5).Microseconds())/1000, kind+"-fromevent-p50-ms")
		b.ReportMetric(float64(pct(ours, 0.99).Microseconds())/1000, kind+"-fromevent-p99-ms")
	}
}

// allocProfile, with HKS_BENCH_MEMPROFILE=PREFIX, writes the process's
// heap profile to PREFIX.before now and to PREFIX.after when stop is
// called: what the changes allocated is
// `go tool pprof -sample_index=alloc_space -base PREFIX.before TEST PREFIX.after`.
func allocProfile(b *testing.B) (stop func()) {
	prefix := os.Getenv("HKS_BENCH_MEMPROFILE")
	if prefix == "" {
		return func() {}
	}
	write := func(path string) {
		runtime.GC() // the profile is as of the last collection
		writeHeapProfile(b, path)
	}
	write(prefix + ".before")
	return func() { write(prefix + ".after") }
}
