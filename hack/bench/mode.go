package main

import (
	"context"
	"fmt"
	"io"
	"math/rand/v2"
	"net/netip"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/haproxy-k8s-sync/haproxy-k8s-sync/internal/testing/lab"
)

// result is one mode's numbers; the JSON field names are the report's.
type result struct {
	Services      int          `json:"services"`
	Endpoints     int          `json:"endpoints"`
	Changes       int          `json:"changes"`
	P50           float64      `json:"latency_p50_ms"`
	P90           float64      `json:"latency_p90_ms"`
	P99           float64      `json:"latency_p99_ms"`
	Max           float64      `json:"latency_max_ms"`
	ReloadsChurn  int          `json:"reloads_churn"`
	ReloadsBurst  int          `json:"reloads_burst"`
	BurstSync     float64      `json:"burst_sync_s"`
	SingleSync    float64      `json:"single_sync_s"`  // one new Service, creation to served
	SingleReloads int          `json:"single_reloads"` // the reloads it took
	Connections   int          `json:"connections"`
	Failed        int          `json:"failed_connections"`
	ControllerRSS float64      `json:"controller_rss_mib"`
	ControllerMap float64      `json:"controller_rss_file_mib"` // of its RSS at the end, file pages (RssFile: the binary mapped in), which VmHWM counts too
	ControllerCPU float64      `json:"controller_cpu_s"`
	HAProxyRSS    float64      `json:"haproxy_rss_mib"`
	InitialSync   float64      `json:"initial_sync_s"`
	StatusSync    float64      `json:"status_sync_s,omitempty"` // every Service's status written (with -pools: allocated), from the controller's start
	HealthChecks  bool         `json:"health_checks"`
	NodeChecks    int          `json:"node_checks"`          // checks HAProxy runs for --node-check: one per node
	ReloadsSync   int          `json:"reloads_initial_sync"` // from HAProxy's start until 2 s after the initial sync (the pool's growth)
	Reloads       []string     `json:"reloads,omitempty"`    // the controller's update line of every reload of the run, timed
	Mode          string       `json:"mode"`
	Listeners     string       `json:"listeners"`                   // ports or tproxy (with run's pool)
	NodeDeath     *deathResult `json:"node_death,omitempty"`        // -health-checks=node: nodes taken out under load
	NodeFlip      *flipResult  `json:"haproxy_node_flip,omitempty"` // HAProxy alone: a node's server in and out of maintenance
	Baseline      *result      `json:"baseline,omitempty"`
}

// runMode runs every step against a fresh HAProxy and controller.
func (b *bench) runMode(ctx context.Context, mode string, changes int) (*result, error) {
	c, w := b.cfg, b.w
	logf("=== mode %s ===", mode)
	dir := c.runDir(b.dir, mode)
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, err
	}
	h, err := startHAProxy(b.ctlBin, dir, c.initArgs()...)
	if err != nil {
		return nil, err
	}
	defer h.stop(syscall.SIGTERM, 10*time.Second)
	obs := newObserver(h, c.poolFile(h))
	defer obs.close()
	res := &result{Mode: mode, Listeners: c.listeners, Services: c.services, Endpoints: c.services * c.endpoints, Changes: changes, HealthChecks: c.checks()}

	args := append(c.runArgs(b.kube.KubeconfigPath, h, mode), c.nodeCheckArgs(res)...)
	start := time.Now()
	var env []string
	if c.ctlEnv != "" {
		env = strings.Split(c.ctlEnv, ",")
		logf("controller environment: %s", c.ctlEnv)
	}
	ctl, err := startController(filepath.Join(dir, "controller.log"), b.ctlBin, env, args...)
	if err != nil {
		return nil, err
	}
	defer ctl.stop(syscall.SIGTERM, 10*time.Second)

	// 1. Initial sync.
	seen, err := obs.waitAll(ctx, w.expectedRange(0, c.services), c.syncTimeout, func(ok, total int) { logf("  initial sync: %d/%d backends", ok, total) })
	if err != nil {
		return nil, fmt.Errorf("initial sync: %w (controller log %s)", err, ctl.log)
	}
	res.InitialSync = seen.Sub(start).Seconds()
	logf("initial sync: every server of %d backends in HAProxy %.2fs after the controller started", c.services, res.InitialSync)
	if err := pause(ctx, c.minReload+2*time.Second); err != nil { // the passes after the first (the pool's growth) before the churn
		return nil, err
	}
	if res.ReloadsSync, err = obs.reloads(ctx); err != nil {
		return nil, err
	}
	logf("reloads from HAProxy's start until 2 s after the initial sync: %d", res.ReloadsSync)
	var addrs map[int]netip.Addr
	if c.writesStatus() {
		// Statuses (with -pools: the allocation) written before the churn:
		// each write makes the next pass a full one.
		if seen, addrs, err = b.statusSync(ctx, c.services, c.syncTimeout); err != nil {
			return nil, fmt.Errorf("statuses: %w", err)
		}
		res.StatusSync = seen.Sub(start).Seconds()
		logf("statuses: every Service's address in its status %.2fs after the controller started", res.StatusSync)
	}
	var targets []string
	for i := range c.probe {
		addr := c.frontendAddr(i)
		if a, ok := addrs[i]; ok && c.pools {
			addr = netip.AddrPortFrom(a, uint16(c.feBase+i)).String() // the address it was given
		}
		if err := probe(addr, 10*time.Second); err != nil {
			return nil, fmt.Errorf("probe of Service %d: %w", i, err)
		}
		targets = append(targets, addr)
	}
	logf("probes through HAProxy to %d Services succeed", c.probe)

	// 4. Load from a separate process during churn and burst.
	load, err := startLoad(dir, targets, c.loadRate, c.syncTimeout*2, c.loadRate*3600)
	if err != nil {
		return nil, err
	}
	defer load.stop(syscall.SIGKILL, time.Second)

	// 2+3. Churn.
	r0, err := obs.reloads(ctx)
	if err != nil {
		return nil, err
	}
	lat, err := b.churn(ctx, obs, changes, mode == "reload")
	if err != nil {
		return nil, err
	}
	r1, err := obs.reloads(ctx)
	if err != nil {
		return nil, err
	}
	res.ReloadsChurn = r1 - r0
	res.setChurn(lat)
	if mode == "hybrid" && c.nodeChecks() {
		if res.NodeFlip, err = obs.nodeFlips(ctx, 20); err != nil {
			return nil, fmt.Errorf("node flips: %w", err)
		}
	}

	// 3a. One new Service: from its creation to its servers in HAProxy,
	// the reloads it took and the phases of the passes it caused.
	mark := logMark(ctl.log)
	t := time.Now()
	if err := w.createServices(ctx, c.services, c.services+1); err != nil {
		return nil, err
	}
	seen, err = obs.waitAll(ctx, w.expectedRange(c.services, c.services+1), c.syncTimeout, nil)
	if err != nil {
		return nil, fmt.Errorf("single Service: %w", err)
	}
	res.SingleSync = seen.Sub(t).Seconds()
	r0 = r1
	if r1, err = obs.reloads(ctx); err != nil { // the burst's reloads count from here
		return nil, err
	}
	res.SingleReloads = r1 - r0
	logf("one new Service served %.2fs after its creation, %d reloads", res.SingleSync, res.SingleReloads)
	ups, err := reloadUpdates(ctx, ctl.log, mark, res.SingleReloads, 30*time.Second)
	if err != nil {
		return nil, err
	}
	for _, u := range ups {
		logf("  update: %s", u)
	}

	// 3b. Burst: 100 Services at once.
	t = time.Now()
	first := c.services + 1
	if err := w.createServices(ctx, first, first+burstSize); err != nil {
		return nil, err
	}
	created := time.Since(t)
	seen, err = obs.waitAll(ctx, w.expectedRange(first, first+burstSize), c.syncTimeout, nil)
	if err != nil {
		return nil, fmt.Errorf("burst: %w", err)
	}
	res.BurstSync = seen.Sub(t).Seconds()
	if err := pause(ctx, c.minReload+2*time.Second); err != nil { // let trailing reloads happen and be counted
		return nil, err
	}
	r2, err := obs.reloads(ctx)
	if err != nil {
		return nil, err
	}
	res.ReloadsBurst = r2 - r1
	logf("burst: %d Services created in %s, all served %.2fs after the first write, %d reloads",
		burstSize, created.Round(time.Millisecond), res.BurstSync, res.ReloadsBurst)
	if res.Reloads, err = reloadLines(ctx, ctl.log, r2); err != nil {
		return nil, err
	}

	lr, err := load.finish()
	if err != nil {
		return nil, err
	}
	res.Connections, res.Failed = lr.Total, lr.Failed
	logf("load: %d connections, %d failed %s", lr.Total, lr.Failed, lr.FirstErr)

	// 5. Cost.
	_, hwm, file := procStatus(ctl.pid())
	res.ControllerRSS, res.ControllerMap = float64(hwm)/1024, float64(file)/1024
	res.ControllerCPU = cpuSeconds(ctl.pid())
	res.HAProxyRSS = obs.rssMiB(ctx)
	logf("cost: controller peak RSS %.1f MiB (file pages at the end %.1f MiB), CPU %.2f s; HAProxy master+worker RSS %.1f MiB",
		res.ControllerRSS, res.ControllerMap, res.ControllerCPU, res.HAProxyRSS)

	// 6. Node death (hybrid only: HAProxy alone acts, the controller has nothing to do).
	if c.nodeChecks() && c.deaths > 0 && mode == "hybrid" {
		if res.NodeDeath, err = b.nodeDeaths(ctx, obs, ctl, targets, dir); err != nil {
			return nil, err
		}
	}

	// Clean up for the next mode.
	ctl.stop(syscall.SIGTERM, 10*time.Second)
	h.stop(syscall.SIGTERM, 10*time.Second)
	if err := w.deleteServices(ctx, c.services, c.services+1+burstSize); err != nil {
		return nil, err
	}
	if err := w.restore(ctx); err != nil {
		return nil, err
	}
	w.settle(ctx)
	return res, nil
}

// churn makes n single-object changes one after the other, each timed from
// the return of its API write until HAProxy's runtime state shows it in
// the backend of a Service it affects. The sequence cycles through: an
// endpoint goes not ready, comes back; a node gets the exclude label, loses
// it; a node is added, deleted.
// backendWaiter waits until a backend runs exactly the servers wanted.
type backendWaiter interface {
	waitBackend(ctx context.Context, be string, want map[netip.AddrPort]bool, fresh bool, timeout time.Duration) (time.Time, error)
}

// slowChange: a change seen later than this is logged with its time.
const slowChange = 20 * time.Millisecond

func (b *bench) churn(ctx context.Context, obs backendWaiter, n int, fresh bool) ([]time.Duration, error) {
	w := b.w
	rng := rand.New(rand.NewPCG(b.cfg.seed, 7))
	lat := make([]time.Duration, 0, n)
	kinds := []string{"endpoint not ready", "endpoint ready", "node excluded", "node included", "node added", "node deleted"}
	byKind := make([][]time.Duration, len(kinds))
	var s, j, node, m int
	for k := range n {
		var err error
		witness := 0
		switch k % 6 {
		case 0:
			s, j = rng.IntN(w.S), rng.IntN(w.E)
			err, witness = w.setReady(ctx, s, j, false), s
		case 1:
			err, witness = w.setReady(ctx, s, j, true), s
		case 2:
			s, j = rng.IntN(w.S), rng.IntN(w.E)
			node = (s + j) % w.N
			err, witness = w.setExcluded(ctx, node, true), s
		case 3:
			err, witness = w.setExcluded(ctx, node, false), s
		case 4:
			m = (k / 6) % extraNodes
			err, witness = w.setExtra(ctx, m, true), w.S-1-m
		case 5:
			err, witness = w.setExtra(ctx, m, false), w.S-1-m
		}
		if err != nil {
			return nil, fmt.Errorf("change %d: %w", k, err)
		}
		written := time.Now()
		seen, err := obs.waitBackend(ctx, w.backend(witness), w.expected(witness), fresh, 60*time.Second)
		if err != nil {
			return nil, fmt.Errorf("change %d not applied: %w", k, err)
		}
		lat = append(lat, seen.Sub(written))
		byKind[k%6] = append(byKind[k%6], seen.Sub(written))
		if d := seen.Sub(written); d > slowChange { // the wall clock, to read beside the controller's log
			logf("  slow: change %d (%s, %s) written %s, seen %.1f ms later", k, kinds[k%6], w.backend(witness),
				written.UTC().Format("15:04:05.000000"), ms(d))
		}
		if (k+1)%100 == 0 || k+1 == n {
			st := sortedCopy(lat)
			logf("  %d/%d changes: p50 %.1f ms, p99 %.1f ms", k+1, n, percentile(st, .5), percentile(st, .99))
		}
	}
	for i, name := range kinds {
		if st := sortedCopy(byKind[i]); len(st) > 0 {
			logf("  %-18s %4d changes: p50 %7.1f ms, p99 %7.1f ms, max %7.1f ms", name, len(st), percentile(st, .5), percentile(st, .99), ms(st[len(st)-1]))
		}
	}
	return lat, nil
}

func probe(addr string, within time.Duration) error {
	deadline := time.Now().Add(within)
	for {
		_, err := lab.Probe(addr, time.Second)
		if err == nil || time.Now().After(deadline) {
			return err
		}
		time.Sleep(50 * time.Millisecond)
	}
}

func printTable(out io.Writer, r *result) {
	rows := []struct {
		name string
		f    func(*result) float64
		unit string
	}{
		{"initial sync", func(r *result) float64 { return r.InitialSync }, "s"},
		{"statuses written", func(r *result) float64 { return r.StatusSync }, "s"},
		{"latency p50", func(r *result) float64 { return r.P50 }, "ms"},
		{"latency p90", func(r *result) float64 { return r.P90 }, "ms"},
		{"latency p99", func(r *result) float64 { return r.P99 }, "ms"},
		{"latency max", func(r *result) float64 { return r.Max }, "ms"},
		{"reloads (churn)", func(r *result) float64 { return float64(r.ReloadsChurn) }, ""},
		{"reloads (burst of 100)", func(r *result) float64 { return float64(r.ReloadsBurst) }, ""},
		{"burst served", func(r *result) float64 { return r.BurstSync }, "s"},
		{"one new Service served", func(r *result) float64 { return r.SingleSync }, "s"},
		{"reloads (one Service)", func(r *result) float64 { return float64(r.SingleReloads) }, ""},
		{"connections", func(r *result) float64 { return float64(r.Connections) }, ""},
		{"failed connections", func(r *result) float64 { return float64(r.Failed) }, ""},
		{"controller peak RSS", func(r *result) float64 { return r.ControllerRSS }, "MiB"},
		{"of it the binary's pages (at the end)", func(r *result) float64 { return r.ControllerMap }, "MiB"},
		{"controller CPU", func(r *result) float64 { return r.ControllerCPU }, "s"},
		{"HAProxy RSS", func(r *result) float64 { return r.HAProxyRSS }, "MiB"},
	}
	fmt.Fprintf(out, "\n%d Services, %d endpoints, health checks %v, node checks %d; changes: %s %d", r.Services, r.Endpoints, r.HealthChecks, r.NodeChecks, r.Mode, r.Changes)
	if r.Baseline != nil {
		fmt.Fprintf(out, ", %s %d", r.Baseline.Mode, r.Baseline.Changes)
	}
	fmt.Fprintf(out, "\n%-24s %12s", "", r.Mode)
	if r.Baseline != nil {
		fmt.Fprintf(out, " %12s %16s", r.Baseline.Mode, r.Baseline.Mode+"/"+r.Mode)
	}
	fmt.Fprintln(out)
	for _, row := range rows {
		v := row.f(r)
		fmt.Fprintf(out, "%-24s %12s", row.name, num(v, row.unit))
		if r.Baseline != nil {
			bv := row.f(r.Baseline)
			ratio := "-"
			if v != 0 {
				ratio = strconv.FormatFloat(bv/v, 'f', 2, 64) + "x"
			}
			fmt.Fprintf(out, " %12s %16s", num(bv, row.unit), ratio)
		}
		fmt.Fprintln(out)
	}
	fmt.Fprintln(out)
	if f := r.NodeFlip; f != nil {
		fmt.Fprintf(out, "HAProxy alone, a node in and out of maintenance (%s, %d servers follow it): p50 %.2f ms, p99 %.2f ms, max %.2f ms over %d commands\n\n",
			f.Node, f.Followers, f.P50, f.P99, f.Max, f.Flips)
	}
	if r.NodeDeath != nil {
		printDeath(out, r.NodeDeath)
	}
}

func num(v float64, unit string) string {
	if unit == "" {
		return strconv.FormatFloat(v, 'f', -1, 64)
	}
	return strconv.FormatFloat(v, 'f', 2, 64) + " " + unit
}

// nodeCheckArgs is the controller's --node-check flags: the stand-ins'
// /healthz with -health-checks=node (res counts the checks), else none.
// The stand-ins answer no Service's healthCheckNodePort: the Local
// Services are checked as the bench says (-health-checks), not there
// (--local-check=service-port; its default checks them there since
// issue 29).
func (c *config) nodeCheckArgs(res *result) []string {
	if c.nodeChecks() {
		res.NodeChecks = c.nodes
		return []string{"--node-check=http:" + strconv.Itoa(nodeCheckPort) + "/healthz", "--node-check-interval=" + c.nodeInter.String(),
			"--node-check-rise=" + strconv.Itoa(c.nodeRise), "--node-check-fall=" + strconv.Itoa(c.nodeFall), "--local-check=service-port"}
	}
	// Explicit: the stand-ins answer no /healthz here, and the
	// controller's default node check would take every node down.
	return []string{"--node-check=none", "--local-check=service-port"}
}
