package e2e

import (
	"os"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/haproxy-k8s-sync/haproxy-k8s-sync/internal/testing/lab"
)

// defaultPoll is how often BenchmarkServicesScaleNew probes a new
// Service it waits for. Its detection delay (from the moment HAProxy
// would answer to the probe that sees it) is at most one period of the
// poll, half of it on average: the period is the failed probe (~50-100
// µs) and the sleep. The earlier poll, time.Sleep(1 ms), slept ~1.1 ms
// at best (the runtime's network poller waits whole milliseconds) and
// 1.5-3.5 ms beside other work; lab.Sleep(250 µs) sleeps ~0.3 ms, for
// ~10-20% of a core while it polls.
const defaultPoll = 250 * time.Microsecond

// polls are the poll intervals of HKS_BENCH_POLL (comma-separated Go
// durations, e.g. "1ms,250us": the new Services take them in turn, side
// by side in one run), with what each measured.
type polls struct {
	intervals []time.Duration
	lat       [][]time.Duration // per interval: written -> answered
	periods   [][]time.Duration // per interval: each Service's mean poll period
}

func newPolls(b *testing.B) *polls {
	p := &polls{intervals: []time.Duration{defaultPoll}}
	if v := os.Getenv("HKS_BENCH_POLL"); v != "" {
		p.intervals = nil
		for _, s := range strings.Split(v, ",") {
			d, err := time.ParseDuration(strings.TrimSpace(s))
			if err != nil || d <= 0 {
				b.Fatalf("HKS_BENCH_POLL: %q is not a positive duration", s)
			}
			p.intervals = append(p.intervals, d)
		}
	}
	p.lat, p.periods = make([][]time.Duration, len(p.intervals)), make([][]time.Duration, len(p.intervals))
	return p
}

// every is the interval of the i-th new Service.
func (p *polls) every(i int) time.Duration { return p.intervals[i%len(p.intervals)] }

func (p *polls) add(i int, lat time.Duration, a lab.Answered) {
	k := i % len(p.intervals)
	p.lat[k] = append(p.lat[k], lat)
	if a.Probes > 1 {
		p.periods[k] = append(p.periods[k], a.Period)
	}
}

// log writes, per interval, the Services' times and the poll's period:
// what the poll adds to each time is at most one period (half on
// average).
func (p *polls) log(b *testing.B, who string, line func([]time.Duration) string) {
	for k, every := range p.intervals {
		per := slices.Clone(p.periods[k])
		slices.Sort(per)
		period := "none"
		if len(per) > 0 {
			period = per[len(per)/2].Round(time.Microsecond).String() + " median, " + per[len(per)-1].Round(time.Microsecond).String() + " max"
		}
		b.Logf("%s: polled every %s: %d Services, written -> answered %s; poll period %s (detection delay at most one period, half on average)",
			who, every, len(p.lat[k]), line(p.lat[k]), period)
	}
}
