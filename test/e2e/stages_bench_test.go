package e2e

import (
	"context"
	"strings"
	"sync"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/watch"
	gwclient "sigs.k8s.io/gateway-api/pkg/client/clientset/versioned"
)

// routeEvents records when a watch of the test's own (beside the
// controller's informer, on the same apiserver) first saw each event of
// an object at or after a mark: the apiserver's delivery of a write.
type routeEvents struct {
	mu   sync.Mutex
	seen map[string][]time.Time
}

// watchRoutes watches the HTTPRoutes of ns from now until b ends.
func watchRoutes(b *testing.B, gc gwclient.Interface) *routeEvents {
	return watchEvents(b, func(ctx context.Context) (watch.Interface, error) {
		return gc.GatewayV1().HTTPRoutes(ns).Watch(ctx, metav1.ListOptions{})
	})
}

// watchEvents records the events of the watch start opens, from now
// until b ends.
func watchEvents(b *testing.B, start func(context.Context) (watch.Interface, error)) *routeEvents {
	ctx, cancel := context.WithCancel(context.Background())
	b.Cleanup(cancel)
	w, err := start(ctx)
	if err != nil {
		b.Fatal(err)
	}
	e := &routeEvents{seen: map[string][]time.Time{}}
	go func() {
		defer w.Stop()
		for ev := range w.ResultChan() {
			at := time.Now()
			if m, ok := ev.Object.(metav1.Object); ok {
				e.mu.Lock()
				e.seen[m.GetName()] = append(e.seen[m.GetName()], at)
				e.mu.Unlock()
			}
		}
	}()
	return e
}

// first is the first event of name at or after t, polled until deadline.
func (e *routeEvents) first(name string, t time.Time, deadline time.Duration) (time.Time, bool) {
	for start := time.Now(); time.Since(start) < deadline; time.Sleep(time.Millisecond) { // poll interval
		e.mu.Lock()
		for _, at := range e.seen[name] {
			if !at.Before(t) {
				e.mu.Unlock()
				return at, true
			}
		}
		e.mu.Unlock()
	}
	return time.Time{}, false
}

// pass is one controller pass that changed HAProxy at runtime, from its
// JSON "update" log line: when it started and ended, and its parts.
type pass struct {
	start, end time.Time
	// compute: the snapshot and gateway.Compute ("parse"); driver: the
	// driver's Apply less its write and runtime ("apply" - "write" -
	// "runtime": planning, the maps' lowering and diff); write: the map
	// files written; runtime: the Runtime API's commands answered;
	// status: the result handed to the status publisher ("status").
	compute, driver, write, runtime, status time.Duration
	parts                                   bool // the line had "apply" (older code: not)
}

// runtimePasses are the passes with ops in log (--log-format json).
func runtimePasses(log string) []pass {
	var out []pass
	type line struct {
		passEnd
		Parse   time.Duration  `json:"parse"`
		Apply   *time.Duration `json:"apply"`
		Write   time.Duration  `json:"write"`
		Runtime time.Duration  `json:"runtime"`
		Status  time.Duration  `json:"status"`
	}
	forPassLines(log, func(l line) {
		p := pass{start: l.Time.Add(-l.Total), end: l.Time, compute: l.Parse, write: l.Write, runtime: l.Runtime, status: l.Status}
		if l.Apply != nil {
			p.parts, p.driver = true, *l.Apply-l.Write-l.Runtime
		}
		out = append(out, p)
	})
	return out
}

// change is one write's timestamps: the write called and returned, the
// test's watch seeing it, and the first 200 through HAProxy.
type change struct{ start, written, seen, served time.Time }

// stages splits each change's time to the first 200 at its pass (the
// first runtime pass ending after the write returned): write (the API call,
// apiserver and etcd), watch (until the event reached a watcher), queue
// (the event to its pass's start), pass (compute and map commands
// answered), probe (pass end to first 200). A change with no pass found
// is left out. The pass is split further, where its line has the parts:
// compute, driver (planning and lowering), mapwrite, runtime, status.
func stages(changes []change, passes []pass) map[string][]time.Duration {
	out := map[string][]time.Duration{}
	for _, c := range changes {
		i := 0
		for i < len(passes) && passes[i].end.Before(c.written) {
			i++
		}
		if i == len(passes) {
			continue
		}
		p := passes[i]
		out["write"] = append(out["write"], c.written.Sub(c.start))
		if !c.seen.IsZero() { // else the test's watch missed it (a watch ended): no watch or queue time
			out["watch"] = append(out["watch"], c.seen.Sub(c.written))
			out["queue"] = append(out["queue"], p.start.Sub(c.seen))
		}
		out["pass"] = append(out["pass"], p.end.Sub(p.start))
		if p.parts {
			out["compute"] = append(out["compute"], p.compute)
			out["driver"] = append(out["driver"], p.driver)
			out["mapwrite"] = append(out["mapwrite"], p.write)
			out["runtime"] = append(out["runtime"], p.runtime)
			out["status"] = append(out["status"], p.status)
		}
		out["probe"] = append(out["probe"], c.served.Sub(p.end))
	}
	return out
}

// stageOrder is the order stages are reported in.
var stageOrder = []string{"write", "watch", "queue", "pass", "compute", "driver", "mapwrite", "runtime", "status", "probe"}

// reportStages logs each stage's p50/p99 and reports its p50 as a metric.
func reportStages(b *testing.B, kind string, s map[string][]time.Duration) {
	b.Helper()
	var parts []string
	for _, k := range stageOrder {
		if len(s[k]) == 0 {
			continue
		}
		parts = append(parts, k+" p50 "+pct(s[k], 0.5).Round(10*time.Microsecond).String()+" p99 "+pct(s[k], 0.99).Round(10*time.Microsecond).String())
		b.ReportMetric(float64(pct(s[k], 0.5).Microseconds())/1000, kind+"-"+k+"-p50-ms")
	}
	b.Logf("%s, stages (%d changes): %s", kind, len(s["write"]), strings.Join(parts, "; "))
}
