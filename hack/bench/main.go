// Command bench measures haproxy-k8s-sync end to end against a real
// kube-apiserver (with etcd), a real HAProxy in master-worker mode and node
// stand-ins on loopback addresses: initial sync, change-to-route latency,
// reloads, hitlessness under load and cost, in hybrid mode and, as a
// baseline, in reload-on-every-change mode. Run it with `make bench`.
//
// Everything stays on loopback: nodes are 127.<subnet>.0.x, frontends bind
// 127.0.0.1. The last line of the output is one JSON object.
package main

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"math/rand/v2"
	"net"
	"os"
	"os/signal"
	"path/filepath"
	"strconv"
	"syscall"
	"time"

	"k8s.io/client-go/kubernetes"

	"github.com/haproxy-k8s-sync/haproxy-k8s-sync/internal/testing/kubeapi"
	"github.com/haproxy-k8s-sync/haproxy-k8s-sync/internal/testing/lab"
)

// burstSize is how many Services the burst step adds at once.
const burstSize = 100

// nodeCheckPort is where the node stand-ins answer /healthz with -health-checks=node
// (kube-proxy's port).
const nodeCheckPort = 10256

type config struct {
	services, endpoints, nodes, changes int
	baseline                            bool
	baselineChanges                     int
	healthChecks                        string
	trackNodes                          bool
	probe, loadRate                     int
	minReload, persist, syncTimeout     time.Duration
	reloadSettle                        time.Duration
	feBase, npBase, subnet              int
	dir                                 string
	keep                                bool
	seed                                uint64
	pprof                               string
	ctlEnv, ctlBin                      string
	driver                              string
	dpReloadDelay                       time.Duration
	dpCost                              string
	nodeInter                           time.Duration // --node-check-interval
	nodeRise, nodeFall                  int
	deaths                              int // node-death rounds of each kind
	pools                               bool
	publish                             string
	gateway                             bool // the gateway benchmark (gateway.go)
	gatewayScale                        int  // with gateway: more routed backends (gatewaypool.go)
	comparePools                        bool
	statusQPS                           float64
	listenerModes                       []string // -listeners, in order (listeners.go)
	listeners                           string   // this run's: ports or tproxy
	logLevel                            string   // the controller's --log-level
	baseBin                             string   // -base-controller-bin: each listener mode first with this controller
	haproxyQuiet                        bool     // -haproxy-quiet: the controller under test renders HAProxy's quiet (quiet.go)
	baseRun                             bool     // this run is -base-controller-bin's (runListeners)
}

func main() {
	var c config
	var loadTarget string
	var loadDur time.Duration
	var loadMax int
	var listeners string
	flag.IntVar(&c.services, "services", 1000, "LoadBalancer Services (S)")
	flag.StringVar(&c.publish, "publish-address", "", "the controller's --publish-address: every Service's status written, as -pools does (for a fair comparison with -pools)")
	flag.BoolVar(&c.pools, "pools", false, "each Service on its own address from an AddressPool (--address-pools; a loopback pool, 127.64.0.0/16)")
	flag.BoolVar(&c.comparePools, "compare-pools", false, "two hybrid runs side by side: one address for all (-publish-address 127.0.0.1), then -pools; no reload baseline")
	flag.Float64Var(&c.statusQPS, "status-qps", 0, "the controller's --status-qps (0: its default)")
	flag.IntVar(&c.endpoints, "endpoints", 5, "endpoints per Service (E), each on a different node")
	flag.IntVar(&c.nodes, "nodes", 20, "nodes (N), at 127.<subnet>.0.1..N")
	flag.IntVar(&c.changes, "changes", 500, "single-object changes whose latency is measured (C)")
	flag.BoolVar(&c.baseline, "baseline", true, "also run every step with --apply=reload (the baseline)")
	flag.IntVar(&c.baselineChanges, "baseline-changes", 0, "changes in the baseline run (0: same as -changes)")
	flag.BoolVar(&c.trackNodes, "track-nodes", true, "the controller's --track-nodes: unchecked servers follow their node")
	flag.StringVar(&c.healthChecks, "health-checks", "auto", "true, false, auto (on when S*E <= 10000: each checked server costs HAProxy a file descriptor), or node: servers unchecked, following their node, and each node checked once (--node-check on the stand-ins' /healthz)")
	flag.IntVar(&c.probe, "probe", 8, "Services whose nodePorts the node stand-ins listen on; they are probed and loaded")
	flag.IntVar(&c.loadRate, "load-rate", 400, "connections per second of the load process")
	flag.DurationVar(&c.minReload, "min-reload-interval", 100*time.Millisecond, "controller --min-reload-interval")
	flag.DurationVar(&c.reloadSettle, "reload-settle", 300*time.Millisecond, "controller --reload-settle")
	flag.DurationVar(&c.persist, "persist-interval", time.Second, "controller --persist-interval")
	flag.DurationVar(&c.syncTimeout, "sync-timeout", 10*time.Minute, "give up waiting for a sync after this")
	flag.IntVar(&c.feBase, "frontend-base", 20000, "Service i listens on 127.0.0.1:frontend-base+i")
	flag.IntVar(&c.npBase, "nodeport-base", 30000, "Service i has nodePort nodeport-base+i")
	flag.IntVar(&c.subnet, "subnet", 0, "nodes live in 127.<subnet>.0.0/16 (0: random 100-199)")
	flag.StringVar(&c.dir, "dir", "", "work directory (default: a new temporary one)")
	flag.BoolVar(&c.keep, "keep", false, "keep the work directory (logs, configs)")
	flag.Uint64Var(&c.seed, "seed", 1, "seed of the change sequence (the same in both modes)")
	flag.StringVar(&c.pprof, "controller-pprof", "", "pass --pprof-address to the controller (e.g. 127.0.0.1:6060)")
	flag.StringVar(&c.ctlBin, "controller-bin", "", "use this controller binary instead of building ./cmd/haproxy-k8s-sync (to compare versions)")
	flag.StringVar(&c.ctlEnv, "controller-env", "", "extra environment of the controller, comma-separated KEY=VALUE (e.g. GOMEMLIMIT=100MiB)")
	flag.StringVar(&c.driver, "driver", "haproxy", "haproxy: a real HAProxy, hybrid mode and the reload baseline; dataplane: the Data Plane API driver against the in-memory test server")
	flag.DurationVar(&c.nodeInter, "node-check-interval", 2*time.Second, "with -health-checks=node: the controller's --node-check-interval")
	flag.IntVar(&c.nodeRise, "node-check-rise", 2, "with -health-checks=node: --node-check-rise")
	flag.IntVar(&c.nodeFall, "node-check-fall", 2, "with -health-checks=node: --node-check-fall")
	flag.IntVar(&c.deaths, "node-deaths", 3, "with -health-checks=node: after the burst, under load, take this many nodes out and back, each way (dead: ports and /healthz closed; 503: /healthz answers 503), hybrid mode only; 0: none")
	flag.DurationVar(&c.dpReloadDelay, "dataplane-reload-delay", time.Second, "the test server's reload_delay (driver dataplane)")
	flag.StringVar(&c.dpCost, "dataplane-cost", "measured", "the test server's cost of requests (driver dataplane): measured (the real API's, see docs/dataplane.md) or none")
	// The load process (this binary re-executed); not for direct use.
	flag.StringVar(&loadTarget, "load-target", "", "internal: run as the load process against these addresses")
	flag.DurationVar(&loadDur, "load-duration", time.Hour, "internal: load process time limit")
	flag.IntVar(&loadMax, "load-max", 1000000, "internal: load process connection limit")
	flag.StringVar(&listeners, "listeners", "ports", "the controller's listener mode: ports (a frontend per port on 127.0.0.1), tproxy (run's default: the fixed listener and the backend pool, on "+tproxyVIP+"; root: the benchmark runs in a network namespace of its own), or both comma-separated (tproxy,ports: one after the other, side by side in the table; no -baseline)")
	flag.StringVar(&c.baseBin, "base-controller-bin", "", "run each -listeners mode first with this controller binary (the baseline, e.g. main's), then with the one under test, against the same objects (at most two runs in all; with -baseline=false)")
	flag.BoolVar(&c.haproxyQuiet, "haproxy-quiet", false, "the controller under test (not -base-controller-bin's) gets --haproxy-quiet at init and run: HAProxy's quiet, no stderr line per server changing state (with the same binary for both: one run without, one with)")
	flag.StringVar(&c.logLevel, "controller-log-level", "info", "the controller's --log-level (debug: every pass and event, to take a change's time apart)")
	flag.BoolVar(&c.gateway, "gateway", false, "instead: the Gateway API mode against the Services mode, endpoint and route churn to served, -changes per phase (root: a network namespace of its own)")
	flag.IntVar(&c.gatewayScale, "gateway-scale", 0, "with -gateway: N more Services, each the backend of a TCPRoute on a listener of its own, from port frontend-base+100; the new-backend phase runs again with --backend-pool")
	flag.Parse()
	var err error
	if c.listenerModes, err = parseListeners(listeners); err != nil {
		fmt.Fprintln(os.Stderr, "bench:", err)
		os.Exit(2)
	}
	c.listeners = c.listenerModes[0]
	if loadTarget != "" {
		os.Exit(runLoad(loadTarget, c.loadRate, loadDur, loadMax))
	}
	if c.gateway {
		if err := runGatewayBench(c); err != nil {
			fmt.Fprintln(os.Stderr, "bench:", err)
			os.Exit(1)
		}
		return
	}
	if err := run(c); err != nil {
		fmt.Fprintln(os.Stderr, "bench:", err)
		os.Exit(1)
	}
}

func (c *config) validate() error {
	switch {
	case c.services < 10:
		return fmt.Errorf("-services must be at least 10")
	case c.endpoints < 1 || c.endpoints > 14:
		return fmt.Errorf("-endpoints must be 1..14")
	case c.nodes < c.endpoints || c.nodes > 250:
		return fmt.Errorf("-nodes must be between -endpoints and 250")
	case c.changes < 1:
		return fmt.Errorf("-changes must be positive")
	case c.driver != "haproxy" && c.driver != "dataplane":
		return fmt.Errorf("-driver: want haproxy or dataplane")
	case c.nodeInter <= 0 || c.nodeRise < 1 || c.nodeFall < 1 || c.deaths < 0:
		return fmt.Errorf("-node-check-interval, -node-check-rise, -node-check-fall must be positive, -node-deaths not negative")
	case c.services > 30000:
		return fmt.Errorf("at most 30000 Services")
	case len(c.listenerModes)*c.binaries() > 2:
		return fmt.Errorf("-listeners with two modes and -base-controller-bin: at most two runs (the table's two columns)")
	case len(c.listenerModes)*c.binaries() > 1 && c.baseline:
		return fmt.Errorf("-listeners with two modes or -base-controller-bin: add -baseline=false (the table's columns are the two runs)")
	case c.anyTProxy() && (c.pools || c.comparePools || c.driver != "haproxy"):
		return fmt.Errorf("-listeners=tproxy: not with -pools, -compare-pools or -driver=dataplane")
	case c.npBase+nodePortSpan(c.services) > 65535 || c.feBase+c.services+burstSize+1 > 65535:
		return fmt.Errorf("too many Services for the port bases")
	}
	c.probe = min(c.probe, c.services-extraNodes)
	if c.baselineChanges <= 0 {
		c.baselineChanges = c.changes
	}
	if c.subnet == 0 {
		c.subnet = 100 + rand.IntN(100)
	}
	return nil
}

// nodePortSpan is the size of the apiserver's nodePort range: every Service
// takes one nodePort, and one more for its healthCheckNodePort.
func nodePortSpan(services int) int { return 2*(services+burstSize+1) + 200 }

// nodeChecks: -health-checks=node, one check per node (--node-check).
func (c *config) nodeChecks() bool { return c.healthChecks == "node" }

func (c *config) checks() bool {
	if c.nodeChecks() {
		return false
	}
	if b, err := strconv.ParseBool(c.healthChecks); err == nil {
		return b
	}
	return c.services*c.endpoints <= 10000
}

// freePorts verifies that the frontend ports are free on 127.0.0.1.
func freeRange(from, n int) error {
	for p := from; p < from+n; p++ {
		l, err := net.Listen("tcp", "127.0.0.1:"+strconv.Itoa(p))
		if err != nil {
			return fmt.Errorf("frontend port %d is not free (choose another -frontend-base): %w", p, err)
		}
		l.Close()
	}
	return nil
}

type bench struct {
	cfg    config
	w      *world
	kube   *kubeapi.Server
	ctlBin string
	dir    string
	nodes  []*lab.NodeServer
	health []*lab.HealthServer // the nodes' /healthz with -health-checks=node
}

func run(c config) error {
	if err := c.validate(); err != nil {
		return err
	}
	if c.anyTProxy() && !inNamespace() {
		return reexecInNetns(c, []string{tproxyVIP + "/32"})
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	dir := c.dir
	if dir == "" {
		d, err := os.MkdirTemp("", "hks-bench-")
		if err != nil {
			return err
		}
		dir = d
	}
	if !c.keep {
		defer os.RemoveAll(dir)
	}
	dir, _ = filepath.Abs(dir)
	if err := freeRange(c.feBase, c.services+burstSize+1); err != nil {
		return err
	}
	b := &bench{cfg: c, dir: dir}
	logf("work directory %s (logs kept with -keep)", dir)
	logf("size: %d Services x %d endpoints on %d nodes (127.%d.0.x), %d changes; health checks %v",
		c.services, c.endpoints, c.nodes, c.subnet, c.changes, c.checks())

	var err error
	if b.ctlBin = c.ctlBin; b.ctlBin == "" {
		if b.ctlBin, err = buildController(dir); err != nil {
			return err
		}
	}
	t := time.Now()
	kube, stopKube, err := kubeapi.StartProcessWithOptions(filepath.Join(dir, "kube"), kubeapi.Options{
		// Room for a nodePort and a healthCheckNodePort (Local policy) per
		// Service, and a cluster IP per Service.
		APIServerArgs: []string{fmt.Sprintf("--service-node-port-range=%d-%d", c.npBase, c.npBase+nodePortSpan(c.services)),
			"--service-cluster-ip-range=172.20.0.0/16"},
	})
	if err != nil {
		return err
	}
	defer stopKube()
	b.kube = kube
	client, err := kubernetes.NewForConfig(kube.Config)
	if err != nil {
		return err
	}
	logf("kube-apiserver ready in %s", since(t))
	if c.pools || c.comparePools {
		if err := installPool(context.Background(), kube.Config); err != nil {
			return fmt.Errorf("-pools: %w", err)
		}
	}
	b.w = newWorld(client, c)

	// Node stand-ins listen only on the nodePorts of the probed Services:
	// one listener per node and Service would exceed the open-file limit.
	for n := range c.nodes {
		ns := lab.NewNodeServer(nodeName(n), b.w.nodeIP(n))
		for i := range c.probe {
			if err := ns.Listen(c.npBase + i); err != nil {
				return err
			}
		}
		b.nodes = append(b.nodes, ns)
		defer ns.Close()
		if c.nodeChecks() { // kube-proxy's /healthz
			h, err := lab.NewHealthServer(b.w.nodeIP(n) + ":" + strconv.Itoa(nodeCheckPort))
			if err != nil {
				return err
			}
			b.health = append(b.health, h)
		}
	}
	defer func() { // the node-death phase replaces some
		for _, h := range b.health {
			h.Close()
		}
	}()
	t = time.Now()
	if err := b.w.createNodes(ctx); err != nil {
		return err
	}
	if err := b.w.createServices(ctx, 0, c.services); err != nil {
		return err
	}
	logf("created %d nodes, %d Services and EndpointSlices (%d endpoints) in %s; nodes listen on the nodePorts of %d probed Services",
		c.nodes, c.services, c.services*c.endpoints, since(t), c.probe)

	if c.driver == "dataplane" {
		res, err := b.runDataplane(ctx, c.changes)
		if err != nil {
			return fmt.Errorf("dataplane: %w", err)
		}
		report(res)
		return nil
	}
	if c.comparePools {
		res, err := b.comparePools(ctx)
		if err != nil {
			return err
		}
		report(res)
		return nil
	}
	if len(c.listenerModes)*c.binaries() > 1 {
		res, err := b.runListeners(ctx)
		if err != nil {
			return err
		}
		report(res)
		return nil
	}
	res, err := b.runMode(ctx, "hybrid", c.changes)
	if err != nil {
		return fmt.Errorf("hybrid: %w", err)
	}
	if c.baseline {
		if res.Baseline, err = b.runMode(ctx, "reload", c.baselineChanges); err != nil {
			return fmt.Errorf("baseline: %w", err)
		}
	}
	report(res)
	return nil
}

// report prints the table and, as the last line, the JSON object.
func report(res *result) {
	printTable(os.Stdout, res)
	js, _ := json.Marshal(res)
	fmt.Println(string(js))
}

func logf(format string, args ...any) {
	fmt.Printf("%s  %s\n", time.Now().Format("15:04:05.000"), fmt.Sprintf(format, args...))
}

func since(t time.Time) time.Duration { return time.Since(t).Round(time.Millisecond) }
