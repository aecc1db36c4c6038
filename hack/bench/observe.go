package main

import (
	"context"
	"fmt"
	"maps"
	"net/netip"
	"slices"
	"sort"
	"time"

	"github.com/haproxy-k8s-sync/haproxy-k8s-sync/internal/haproxy"
	"github.com/haproxy-k8s-sync/haproxy-k8s-sync/internal/spares"
)

// observer reads HAProxy's runtime state over the worker stats socket.
// With the pool (tproxy mode) a Service's backend runs as the spare
// pool.json names (haproxyName).
type observer struct {
	rt     *haproxy.Runtime
	master *haproxy.Master
	pool   string // pool.json, "" without the pool

	// pool.json as last decoded (poolState), and the size and time of
	// the file it was.
	poolKept spares.State
	poolTime time.Time
	poolSize int64
	poolRead bool
}

func newObserver(h *haproxyProc, pool string) *observer {
	return &observer{rt: haproxy.NewRuntime(h.stats), master: haproxy.NewMaster(h.master), pool: pool}
}

func (o *observer) close() { _ = o.rt.Close() }

// inService groups the servers that are not in maintenance by backend.
func inService(states []haproxy.ServerState) map[string]map[netip.AddrPort]bool {
	out := make(map[string]map[netip.AddrPort]bool)
	for _, s := range states {
		m := out[s.Backend]
		if m == nil {
			m = make(map[netip.AddrPort]bool)
			out[s.Backend] = m
		}
		if !s.Maint() {
			m[netip.AddrPortFrom(s.Addr, s.Port)] = true
		}
	}
	return out
}

// backendState reads one backend's servers in service.
func (o *observer) backendState(ctx context.Context, be string) (map[netip.AddrPort]bool, error) {
	ctx, cancel := context.WithTimeout(ctx, 2*time.Second)
	defer cancel()
	ans, err := o.rt.ExecChecked(ctx, []string{"show servers state " + be})
	if err != nil {
		return nil, err
	}
	states, err := haproxy.ParseServersState(ans[0])
	if err != nil {
		return nil, err
	}
	return inService(states)[be], nil
}

// waitBackend polls one backend (about every pollEvery) until its servers in
// service are exactly want, and returns when it saw that. After staleAfter
// without a match, or always when fresh is set, each poll uses a new
// connection: after a reload the persistent one may still talk to the old
// worker. Model backend be is looked up in pool.json (haproxyName) first,
// and again every renameEvery after staleAfter (a Service moved to a
// larger spare).
func (o *observer) waitBackend(ctx context.Context, be string, want map[netip.AddrPort]bool, fresh bool, timeout time.Duration) (time.Time, error) {
	const pollEvery, staleAfter, renameEvery = 500 * time.Microsecond, 200 * time.Millisecond, 50 * time.Millisecond
	start := time.Now()
	deadline := start.Add(timeout)
	name, named := o.haproxyName(be), start
	var got map[netip.AddrPort]bool
	var err error
	for {
		stale := time.Since(start) > staleAfter
		if fresh || stale {
			o.rt.Reset()
		}
		if stale && o.pool != "" && time.Since(named) > renameEvery {
			name, named = o.haproxyName(be), time.Now()
		}
		got, err = o.backendState(ctx, name)
		now := time.Now()
		if err == nil && maps.Equal(got, want) {
			return now, nil
		}
		if ctx.Err() != nil {
			return now, ctx.Err() // stopped (SIGINT, SIGTERM): not a timeout to wait for
		}
		if now.After(deadline) {
			if err != nil {
				return now, fmt.Errorf("%s (%s): %w", be, name, err)
			}
			return now, fmt.Errorf("%s (%s): have %v, want %v", be, name, keys(got), keys(want))
		}
		time.Sleep(pollEvery)
	}
}

// waitAll polls the whole runtime state until every backend in want has
// exactly its servers in service. It returns the time it first saw that.
func (o *observer) waitAll(ctx context.Context, want map[string]map[netip.AddrPort]bool, timeout time.Duration, progress func(ok, total int)) (time.Time, error) {
	deadline := time.Now().Add(timeout)
	lastReport := time.Now()
	for {
		o.rt.Reset() // reloads happen meanwhile: always ask the current worker
		qctx, cancel := context.WithTimeout(ctx, 10*time.Second)
		states, err := o.rt.ShowServersState(qctx)
		cancel()
		now := time.Now()
		bad := ""
		ok := 0
		if err == nil {
			have := inService(states)
			names := o.haproxyNames(maps.Keys(want))
			for be, w := range want {
				if maps.Equal(have[names[be]], w) {
					ok++
				} else if bad == "" || be < bad {
					bad = be
				}
			}
			if ok == len(want) {
				return now, nil
			}
		}
		if progress != nil && now.Sub(lastReport) > 2*time.Second {
			progress(ok, len(want))
			lastReport = now
		}
		if ctx.Err() != nil {
			return now, ctx.Err()
		}
		if now.After(deadline) {
			if err != nil {
				return now, err
			}
			return now, fmt.Errorf("%d of %d backends as expected after %s (first wrong: %s)", ok, len(want), timeout, bad)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// reloads reads the master's reload counter.
func (o *observer) reloads(ctx context.Context) (int, error) {
	p, err := o.master.ShowProc(ctx)
	return p.Reloads, err
}

// rssMiB sums VmRSS of the master and its current workers.
func (o *observer) rssMiB(ctx context.Context) float64 {
	p, err := o.master.ShowProc(ctx)
	if err != nil {
		return 0
	}
	var kib int64
	for _, pid := range append([]int{p.MasterPID}, p.Workers...) {
		rss, _, _ := procStatus(pid)
		kib += rss
	}
	return float64(kib) / 1024
}

func keys(m map[netip.AddrPort]bool) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k.String())
	}
	sort.Strings(out)
	return out
}

// percentile of sorted durations, in ms.
func percentile(sorted []time.Duration, p float64) float64 {
	if len(sorted) == 0 {
		return 0
	}
	i := int(p*float64(len(sorted))+0.5) - 1
	i = max(0, min(i, len(sorted)-1))
	return ms(sorted[i])
}

func ms(d time.Duration) float64 { return float64(d.Microseconds()) / 1000 }

func sortedCopy(d []time.Duration) []time.Duration {
	s := slices.Clone(d)
	slices.Sort(s)
	return s
}

// setChurn records the churn's latency percentiles (lat: one per change)
// and logs them with its reloads.
func (r *result) setChurn(lat []time.Duration) {
	s := sortedCopy(lat)
	r.P50, r.P90, r.P99, r.Max = percentile(s, .50), percentile(s, .90), percentile(s, .99), ms(s[len(s)-1])
	logf("churn: %d changes, p50 %.1f ms, p90 %.1f ms, p99 %.1f ms, max %.1f ms, %d reloads",
		r.Changes, r.P50, r.P90, r.P99, r.Max, r.ReloadsChurn)
}

// pause waits d, or less when ctx ends (the benchmark was signalled).
func pause(ctx context.Context, d time.Duration) error {
	select {
	case <-time.After(d):
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}
