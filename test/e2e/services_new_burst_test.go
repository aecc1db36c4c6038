package e2e

import (
	"fmt"
	"os"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// defaultBurstWriters is how many writers create BenchmarkServicesScaleNew's
// burst: 0, a writer per Service, the shape every earlier BENCHMARKS.md
// section measured (its client's QPS 1000 / burst 2000 do not throttle
// it: kubeapi.Server.Config; fewer writers were slower, burst29).
const defaultBurstWriters = 0

// burstWriters are the writer counts of HKS_BENCH_BURST_WRITERS
// (comma-separated, default 0): each runs a burst of its own, in turn,
// side by side in one run. 1 writes the burst one Service after the
// other; 0 gives every Service a writer of its own (the burst before
// burst29: HKS_BENCH_BURST goroutines at once).
func burstWriters(b testing.TB) []int {
	v := os.Getenv("HKS_BENCH_BURST_WRITERS")
	if v == "" {
		return []int{defaultBurstWriters}
	}
	var out []int
	for _, s := range strings.Split(v, ",") {
		n, err := strconv.Atoi(strings.TrimSpace(s))
		if err != nil || n < 0 {
			b.Fatalf("HKS_BENCH_BURST_WRITERS: %q is not a count of writers (0: one per Service)", s)
		}
		out = append(out, n)
	}
	return out
}

// writersLabel names a burst's writers in the benchmark's lines.
func writersLabel(writers, n int) string {
	if writers == 0 || writers >= n {
		return fmt.Sprintf("%d writers (one per Service)", n)
	}
	if writers == 1 {
		return "1 writer (one after the other)"
	}
	return fmt.Sprintf("%d writers", writers)
}

// writeBurst calls write(i) once for every i in [0, n), at most writers
// of them at a time (0 or more than n: n at a time), and, after each
// write returned without an error, starts written(i, at) in a goroutine
// of its own (the Service's prober: it runs beside the later writes). It
// returns when every write and every written returned, with each
// write's error (nil for the written ones).
func writeBurst(n, writers int, write func(i int) (time.Time, error), written func(i int, at time.Time)) []error {
	if writers <= 0 || writers > n {
		writers = n
	}
	errs := make([]error, n)
	var next atomic.Int64
	var pool, after sync.WaitGroup
	for range writers {
		pool.Go(func() {
			for i := int(next.Add(1) - 1); i < n; i = int(next.Add(1) - 1) { // each index taken once: at most n rounds
				at, err := write(i)
				if errs[i] = err; err != nil {
					continue
				}
				after.Go(func() { written(i, at) })
			}
		})
	}
	pool.Wait()
	after.Wait()
	return errs
}

// burstRun is one burst's numbers: its writers, its times and the
// reloads across it.
type burstRun struct {
	burstTimes
	writers, reloads int
	load             string // burstLoad's accounts
}

// logBursts writes each burst's lines and metrics (who is the
// controller and mode; with more than one burst each metric's name
// ends in its writers, -w16).
func (w *newSvcWorld) logBursts(b *testing.B, who, mode string, bursts []burstRun, line func([]time.Duration) string) {
	ms := func(d time.Duration) float64 { return float64(d.Microseconds()) / 1000 }
	for _, r := range bursts {
		label := writersLabel(r.writers, w.burst)
		b.Logf("%s: burst of %d, %s: all answered %.1f ms after the first write (%d not answered); %d reloads; load %s",
			who, w.burst, label, ms(r.all), r.failed, r.reloads, loadAvg())
		b.Logf("%s: burst of %d, %s: each from its own EndpointSlice written -> answered: %s", who, w.burst, label, line(r.own))
		b.Logf("%s: burst of %d, %s: the creates returned within %.1f ms of the first (the apiserver's); all answered %.1f ms after the last returned (the controller's)",
			who, w.burst, label, ms(r.writes), ms(r.afterLast))
		b.Logf("%s: burst of %d, %s: %s", who, w.burst, label, r.load)
		suffix := ""
		if len(bursts) > 1 {
			suffix = fmt.Sprintf("-w%d", r.writers)
		}
		b.ReportMetric(ms(r.all), mode+"-burst-ms"+suffix)
		b.ReportMetric(ms(r.writes), mode+"-burst-writes-ms"+suffix)
		if len(r.own) > 0 {
			b.ReportMetric(ms(maxDur(r.own)), mode+"-burst-own-max-ms"+suffix)
		}
		if r.failed == 0 {
			b.ReportMetric(ms(r.afterLast), mode+"-burst-after-last-ms"+suffix)
		}
	}
}
