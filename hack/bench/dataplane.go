package main

import (
	"context"
	"fmt"
	"maps"
	"net/netip"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/haproxy-k8s-sync/haproxy-k8s-sync/internal/dataplane"
	"github.com/haproxy-k8s-sync/haproxy-k8s-sync/internal/dataplane/dataplanetest"
	"github.com/haproxy-k8s-sync/haproxy-k8s-sync/internal/haproxy"
)

// dpCost is the test server's cost model named by -dataplane-cost.
func dpCost(name string) (dataplanetest.Cost, error) {
	switch name {
	case "measured":
		return dataplanetest.MeasuredCost, nil
	case "none":
		return dataplanetest.Cost{}, nil
	}
	return dataplanetest.Cost{}, fmt.Errorf("-dataplane-cost %q: want measured or none", name)
}

// The Data Plane API mode (-driver=dataplane) runs the controller with
// --driver=dataplane against the in-memory Data Plane API test server,
// which runs inside this process (with the real API's measured cost, see
// -dataplane-cost), or against a real API when HKS_DATAPLANE_URL
// (HKS_DATAPLANE_USERNAME, HKS_DATAPLANE_PASSWORD) is set. No probes, load
// or HAProxy cost; change-to-route latency is until the runtime state of
// the backend shows the change. Against a real API that state is read from
// its HAProxy's worker stats socket (HKS_DATAPLANE_STATS_SOCKET) and reloads
// are counted by its master (HKS_DATAPLANE_MASTER_SOCKET), so that the
// bench's polling does not load the API it measures; without them it polls
// the API's runtime endpoints, and counts the reloads the API lists.

// dpObs is what the dataplane mode reads of HAProxy.
type dpObs interface {
	backendWaiter
	waitAll(ctx context.Context, want map[string]map[netip.AddrPort]bool, timeout time.Duration) (time.Time, error)
	reloads() int
}

// dpObserver reads what HAProxy runs from the test server in this process,
// or through a real API's runtime endpoints.
type dpObserver struct {
	state      func(be string) map[netip.AddrPort]bool
	reloadsNow func() int
}

func (o dpObserver) reloads() int { return o.reloadsNow() }

// socketObserver reads a real API's HAProxy through its own sockets.
type socketObserver struct{ *observer }

func (o socketObserver) waitAll(ctx context.Context, want map[string]map[netip.AddrPort]bool, timeout time.Duration) (time.Time, error) {
	return o.observer.waitAll(ctx, want, timeout, func(ok, total int) { logf("  %d of %d backends as expected", ok, total) })
}

func (o socketObserver) reloads() int {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	n, err := o.observer.reloads(ctx)
	if err != nil {
		logf("reading the reload counter: %v", err)
	}
	return n
}

func testServerObserver(s *dataplanetest.Server) dpObserver {
	return dpObserver{
		state: func(be string) map[netip.AddrPort]bool {
			states, _ := s.Running(be)
			out := make(map[netip.AddrPort]bool, len(states))
			for _, st := range states {
				if a, err := netip.ParseAddr(st.Address); err == nil && st.Admin != "maint" {
					out[netip.AddrPortFrom(a, uint16(st.Port))] = true
				}
			}
			return out
		},
		reloadsNow: s.Reloads,
	}
}

// apiObserver polls a real API (it loads what it measures: a fallback).
// The API lists only failed reloads, the last successful one and those in
// progress, so its count of reloads is a lower bound.
func apiObserver(c *dataplane.Client) dpObserver {
	return dpObserver{
		state: func(be string) map[netip.AddrPort]bool {
			rs, _ := c.RuntimeServers(context.Background(), be)
			out := make(map[netip.AddrPort]bool, len(rs))
			for _, r := range rs {
				a, err := netip.ParseAddr(fmt.Sprint(r["address"]))
				port, perr := strconv.Atoi(fmt.Sprint(r["port"]))
				if err == nil && perr == nil && r["admin_state"] != "maint" {
					out[netip.AddrPortFrom(a, uint16(port))] = true
				}
			}
			return out
		},
		reloadsNow: func() int {
			rs, _ := c.Reloads(context.Background())
			n := 0
			for _, r := range rs {
				if r.Status != dataplane.ReloadInProgress {
					n++
				}
			}
			return n
		},
	}
}

func (o dpObserver) waitBackend(ctx context.Context, be string, want map[netip.AddrPort]bool, _ bool, timeout time.Duration) (time.Time, error) {
	deadline := time.Now().Add(timeout)
	for {
		got := o.state(be)
		now := time.Now()
		if maps.Equal(got, want) {
			return now, nil
		}
		if now.After(deadline) || ctx.Err() != nil {
			return now, fmt.Errorf("%s: have %v, want %v", be, keys(got), keys(want))
		}
		time.Sleep(500 * time.Microsecond) // poll interval
	}
}

func (o dpObserver) waitAll(ctx context.Context, want map[string]map[netip.AddrPort]bool, timeout time.Duration) (time.Time, error) {
	deadline := time.Now().Add(timeout)
	for {
		ok := 0
		for be, w := range want {
			if maps.Equal(o.state(be), w) {
				ok++
			}
		}
		now := time.Now()
		if ok == len(want) {
			return now, nil
		}
		if now.After(deadline) || ctx.Err() != nil {
			return now, fmt.Errorf("%d of %d backends as expected after %s", ok, len(want), timeout)
		}
		time.Sleep(50 * time.Millisecond) // poll interval
	}
}

// cleanups stands in for a testing.T's Cleanup.
type cleanups []func()

func (c *cleanups) Cleanup(f func()) { *c = append(*c, f) }

func (c *cleanups) run() {
	for i := len(*c) - 1; i >= 0; i-- {
		(*c)[i]()
	}
}

func (b *bench) runDataplane(ctx context.Context, changes int) (*result, error) {
	c, w := b.cfg, b.w
	logf("=== mode dataplane ===")
	dir := filepath.Join(b.dir, "dataplane")
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, err
	}
	var cl cleanups
	defer cl.run()
	url, user, pass := os.Getenv("HKS_DATAPLANE_URL"), os.Getenv("HKS_DATAPLANE_USERNAME"), os.Getenv("HKS_DATAPLANE_PASSWORD")
	var obs dpObs
	switch stats, master := os.Getenv("HKS_DATAPLANE_STATS_SOCKET"), os.Getenv("HKS_DATAPLANE_MASTER_SOCKET"); {
	case url != "" && stats != "" && master != "":
		o := &observer{rt: haproxy.NewRuntime(stats), master: haproxy.NewMaster(master)}
		defer o.close()
		obs = socketObserver{o}
		logf("against the real Data Plane API at HKS_DATAPLANE_URL; HAProxy read through its sockets")
	case url != "":
		client, err := dataplane.New(dataplane.Options{URL: url, Username: user, Password: pass})
		if err != nil {
			return nil, err
		}
		obs = apiObserver(client)
		logf("against the real Data Plane API at HKS_DATAPLANE_URL, polling its runtime endpoints (set HKS_DATAPLANE_STATS_SOCKET and HKS_DATAPLANE_MASTER_SOCKET to read HAProxy directly: polling loads the API measured, and its reload list undercounts)")
	default:
		cost, err := dpCost(c.dpCost)
		if err != nil {
			return nil, err
		}
		user, pass = "bench", "bench-password"
		api := dataplanetest.Start(&cl, dataplanetest.Options{Users: map[string]string{user: pass}, ReloadDelay: c.dpReloadDelay, Cost: cost})
		url, obs = api.URL, testServerObserver(api)
		logf("against the in-process test server (HKS_DATAPLANE_URL not set), cost %s", c.dpCost)
	}
	pwFile := filepath.Join(dir, "password")
	if err := os.WriteFile(pwFile, []byte(pass), 0o600); err != nil {
		return nil, err
	}
	res := &result{Mode: "dataplane", Services: c.services, Endpoints: c.services * c.endpoints, Changes: changes, HealthChecks: c.checks()}
	args := []string{"run", "--kubeconfig", b.kube.KubeconfigPath, "--driver=dataplane", "--dataplane-url", url,
		"--dataplane-username", user, "--dataplane-password-file", pwFile, "--bind-address", "127.0.0.1",
		"--state-file", filepath.Join(dir, "state"), "--default-check=" + strconv.FormatBool(c.checks()),
		"--track-nodes=" + strconv.FormatBool(c.trackNodes),
		"--log-level", "info", "--metrics-address", "127.0.0.1:0"}
	// -health-checks=node: servers unchecked follow their node (_nodes,
	// track), each node checked once on its stand-in's /healthz.
	args = append(args, c.nodeCheckArgs(res)...)
	start := time.Now()
	var env []string
	if c.ctlEnv != "" {
		env = strings.Split(c.ctlEnv, ",")
	}
	ctl, err := startController(filepath.Join(dir, "controller.log"), b.ctlBin, env, args...)
	if err != nil {
		return nil, err
	}
	defer ctl.stop(syscall.SIGTERM, 10*time.Second)

	seen, err := obs.waitAll(ctx, w.expectedRange(0, c.services), c.syncTimeout)
	if err != nil {
		return nil, fmt.Errorf("initial sync: %w (controller log %s)", err, ctl.log)
	}
	res.InitialSync = seen.Sub(start).Seconds()
	logf("initial sync: every server of %d backends running %.2fs after the controller started", c.services, res.InitialSync)

	r0 := obs.reloads()
	lat, err := b.churn(ctx, obs, changes, false)
	if err != nil {
		return nil, err
	}
	res.ReloadsChurn = obs.reloads() - r0
	res.setChurn(lat)

	r1 := obs.reloads()
	t := time.Now()
	if err := w.createServices(ctx, c.services, c.services+burstSize); err != nil {
		return nil, err
	}
	if seen, err = obs.waitAll(ctx, w.expectedRange(c.services, c.services+burstSize), c.syncTimeout); err != nil {
		return nil, fmt.Errorf("burst: %w", err)
	}
	res.BurstSync = seen.Sub(t).Seconds()
	if err := pause(ctx, c.dpReloadDelay+2*time.Second); err != nil { // let trailing reloads happen and be counted
		return nil, err
	}
	res.ReloadsBurst = obs.reloads() - r1
	logf("burst: %d Services served %.2fs after the first write, %d reloads", burstSize, res.BurstSync, res.ReloadsBurst)

	_, hwm, _ := procStatus(ctl.pid())
	res.ControllerRSS = float64(hwm) / 1024
	res.ControllerCPU = cpuSeconds(ctl.pid())
	logf("cost: controller peak RSS %.1f MiB, CPU %.2f s", res.ControllerRSS, res.ControllerCPU)
	ctl.stop(syscall.SIGTERM, 10*time.Second)
	if err := w.deleteServices(ctx, c.services, c.services+burstSize); err != nil {
		return nil, err
	}
	return res, nil
}
