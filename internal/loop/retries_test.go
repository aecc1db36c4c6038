package loop

import (
	"context"
	"errors"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"k8s.io/client-go/util/workqueue"
)

// counting is a workqueue MetricsProvider that counts adds and retries.
type counting struct{ adds, retries atomic.Int64 }

type counter struct{ n *atomic.Int64 }

func (c counter) Inc() { c.n.Add(1) }

type noop struct{}

func (noop) Inc()            {}
func (noop) Dec()            {}
func (noop) Set(float64)     {}
func (noop) Observe(float64) {}

func (c *counting) NewDepthMetric(string) workqueue.GaugeMetric            { return noop{} }
func (c *counting) NewAddsMetric(string) workqueue.CounterMetric           { return counter{&c.adds} }
func (c *counting) NewLatencyMetric(string) workqueue.HistogramMetric      { return noop{} }
func (c *counting) NewWorkDurationMetric(string) workqueue.HistogramMetric { return noop{} }
func (c *counting) NewUnfinishedWorkSecondsMetric(string) workqueue.SettableGaugeMetric {
	return noop{}
}
func (c *counting) NewLongestRunningProcessorSecondsMetric(string) workqueue.SettableGaugeMetric {
	return noop{}
}
func (c *counting) NewRetriesMetric(string) workqueue.CounterMetric { return counter{&c.retries} }

// The queue's retries metric counts failed turns only: a turn put off
// (a reload held back by --min-reload-interval) comes back without being
// counted as a retry.
func TestRetriesMetricCountsFailuresOnly(t *testing.T) {
	deferred := Outcome{Later: true, After: 5 * time.Millisecond}
	failed := Outcome{Err: errors.New("failed")}
	for _, tc := range []struct {
		name     string
		outcomes []Outcome
		retries  int64
	}{
		{name: "done at once", outcomes: []Outcome{{}}},
		{name: "put off three times", outcomes: []Outcome{deferred, deferred, deferred, {}}},
		{name: "put off with no delay", outcomes: []Outcome{{Later: true}, {}}},
		{name: "put off, its error ignored", outcomes: []Outcome{{Later: true, After: time.Millisecond, Err: errors.New("deferred")}, {}}},
		{name: "failed twice", outcomes: []Outcome{failed, failed, {}}, retries: 2},
		{name: "failed, put off, failed", outcomes: []Outcome{failed, deferred, failed, {}}, retries: 2},
	} {
		t.Run(tc.name, func(t *testing.T) {
			m := &counting{}
			l := New(Options{Name: "retries", BaseDelay: time.Millisecond, MaxDelay: 5 * time.Millisecond, MetricsProvider: m})
			ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
			defer cancel()
			l.Add("k")
			turns := 0
			err := l.Run(ctx, func(context.Context, string) Outcome {
				o := tc.outcomes[turns]
				turns++
				if turns == len(tc.outcomes) {
					cancel()
				}
				return o
			})
			if !errors.Is(err, context.Canceled) || turns != len(tc.outcomes) {
				t.Fatalf("Run: %v after %d of %d turns", err, turns, len(tc.outcomes))
			}
			if got := m.retries.Load(); got != tc.retries {
				t.Errorf("workqueue retries %d, want %d", got, tc.retries)
			}
			if got, want := m.adds.Load(), int64(len(tc.outcomes)); got != want {
				t.Errorf("workqueue adds %d, want %d (one per turn)", got, want)
			}
		})
	}
}

// Deferrals of one key share one timer, at the earliest time asked for;
// stopping the loop stops the timers.
func TestDeferralsCoalesce(t *testing.T) {
	m := &counting{}
	l := New(Options{Name: "coalesce", BaseDelay: time.Millisecond, MaxDelay: time.Millisecond, MetricsProvider: m})
	l.addLater("k", time.Hour)
	l.addLater("k", 10*time.Millisecond)
	l.addLater("k", time.Hour)
	l.addLater("other", time.Hour)
	if n := l.pending(); n != 2 {
		t.Fatalf("%d keys pending, want 2", n)
	}
	var mu sync.Mutex
	var keys []string
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	err := l.Run(ctx, func(_ context.Context, key string) Outcome {
		mu.Lock()
		defer mu.Unlock()
		keys = append(keys, key)
		cancel()
		return Outcome{}
	})
	if !errors.Is(err, context.Canceled) || len(keys) != 1 || keys[0] != "k" {
		t.Fatalf("Run: %v, turns %v; want one turn of k after 10ms", err, keys)
	}
	if n := l.pending(); n != 0 {
		t.Errorf("%d deferrals left after the loop stopped", n)
	}
	if m.retries.Load() != 0 || m.adds.Load() != 1 {
		t.Errorf("retries %d adds %d, want 0 and 1", m.retries.Load(), m.adds.Load())
	}
	l.addLater("k", time.Millisecond) // after the stop: nothing
	if n := l.pending(); n != 0 {
		t.Errorf("a deferral was taken after the loop stopped")
	}
}
