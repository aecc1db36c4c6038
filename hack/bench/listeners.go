package main

import (
	"context"
	"fmt"
	"iter"
	"net"
	"os"
	"strconv"
	"strings"

	"github.com/haproxy-k8s-sync/haproxy-k8s-sync/internal/driver/runtimeapi"
	"github.com/haproxy-k8s-sync/haproxy-k8s-sync/internal/spares"
)

// -listeners: how the controller under test listens, run's default
// ("tproxy": the fixed listener behind a TPROXY rule, with run's pool of
// ready backends, issue 29) or a frontend per port ("ports"). Several,
// comma-separated, run one after the other against the same objects,
// each with a fresh HAProxy and controller, side by side in the table.
// tproxy needs root: the whole benchmark then runs in a network namespace
// of its own (reexecInNetns), where the controller's nftables table and
// policy routing rule live and die with it, and the Services' address is
// tproxyVIP, an address of that namespace only.

// tproxyVIP is the Services' address with -listeners=tproxy (TEST-NET-3,
// on the namespace's own dummy interface).
const tproxyVIP = "203.0.113.10"

// parseListeners checks -listeners.
func parseListeners(s string) ([]string, error) {
	var out []string
	seen := map[string]bool{}
	for _, l := range strings.Split(s, ",") {
		l = strings.TrimSpace(l)
		if l != "ports" && l != "tproxy" {
			return nil, fmt.Errorf("-listeners: %q is neither ports nor tproxy", l)
		}
		if seen[l] {
			return nil, fmt.Errorf("-listeners: %s twice", l)
		}
		seen[l] = true
		out = append(out, l)
	}
	return out, nil
}

func (c *config) tproxy() bool { return c.listeners == "tproxy" }

// anyTProxy reports whether some run of -listeners is in tproxy mode.
func (c *config) anyTProxy() bool {
	for _, l := range c.listenerModes {
		if l == "tproxy" {
			return true
		}
	}
	return false
}

// initArgs are the flags of `init` for the run's listener mode.
func (c *config) initArgs() []string {
	if c.tproxy() {
		return append([]string{"--listeners", "tproxy"}, c.quietArgs()...)
	}
	return c.quietArgs()
}

// listenArgs are the controller's flags for the run's listener mode: in
// ports mode never the host's TPROXY (the default, auto, would set it up).
func (c *config) listenArgs() []string {
	if c.tproxy() { // run's default pool of ready backends
		return []string{"--listeners=tproxy", "--bind-address", tproxyVIP}
	}
	return []string{"--listeners=ports", "--bind-address", "127.0.0.1"}
}

// listenHost is the address the Services are served on, but with -pools.
func (c *config) listenHost() string {
	if c.tproxy() {
		return tproxyVIP
	}
	return "127.0.0.1"
}

// poolFile is the controller's pool.json in tproxy mode (the spare each
// Service's backend occupies), "" in ports mode (backends by their own
// names).
func (c *config) poolFile(h *haproxyProc) string {
	if c.tproxy() {
		return runtimeapi.PoolFile(h.cfg)
	}
	return ""
}

// haproxyName is the HAProxy backend serving model backend be: with the
// pool the spare pool.json says it occupies (be itself while it names
// none yet), else be.
func (o *observer) haproxyName(be string) string {
	st, ok := o.poolState()
	if !ok {
		return be
	}
	return st.HAProxyBackend(be)
}

// haproxyNames maps each model backend to its HAProxy name (haproxyName),
// pool.json read once.
func (o *observer) haproxyNames(backends iter.Seq[string]) map[string]string {
	out := make(map[string]string)
	st, ok := o.poolState()
	for be := range backends {
		if ok {
			out[be] = st.HAProxyBackend(be)
		} else {
			out[be] = be
		}
	}
	return out
}

// poolState reads pool.json (written whole, by rename): false without a
// pool or while it cannot be read (not written yet). The file is decoded
// again only when it changed (its size or time): a churn's change is
// timed from its write, and decoding 10,000 spares would be in it.
func (o *observer) poolState() (spares.State, bool) {
	if o.pool == "" {
		return spares.State{}, false
	}
	fi, err := os.Stat(o.pool)
	if err != nil {
		return spares.State{}, false
	}
	if o.poolRead && fi.ModTime().Equal(o.poolTime) && fi.Size() == o.poolSize {
		return o.poolKept, true
	}
	f, err := os.Open(o.pool)
	if err != nil {
		return spares.State{}, false
	}
	defer f.Close()
	st, err := spares.Decode(f)
	if err != nil {
		return spares.State{}, false
	}
	o.poolKept, o.poolTime, o.poolSize, o.poolRead = st, fi.ModTime(), fi.Size(), true
	return st, true
}

// servedAt is Service i's host:port (its frontend, or the listener's
// address and its port).
func (c *config) servedAt(i int) string {
	return net.JoinHostPort(c.listenHost(), strconv.Itoa(c.feBase+i))
}

// inNamespace reports whether the benchmark runs in the network
// namespace reexecInNetns made.
func inNamespace() bool { return os.Getenv(envBenchNetns) != "" }

// binaries is how many controllers each listener mode runs with.
func (c *config) binaries() int {
	if c.baseBin != "" {
		return 2
	}
	return 1
}

// runListeners runs the hybrid mode once per -listeners mode, with the
// -base-controller-bin first when given (the first run's result carries
// the second as its Baseline: the table's columns).
func (b *bench) runListeners(ctx context.Context) (*result, error) {
	var first, prev *result
	base, bin := b.cfg, b.ctlBin
	defer func() { b.cfg, b.ctlBin = base, bin }()
	for _, l := range base.listenerModes {
		bins := []string{bin}
		if base.baseBin != "" {
			bins = []string{base.baseBin, bin}
		}
		for k, ctl := range bins {
			b.cfg, b.ctlBin = base, ctl
			b.cfg.listeners = l
			b.cfg.baseRun = len(bins) > 1 && k == 0
			r, err := b.runMode(ctx, "hybrid", base.changes)
			if err != nil {
				return nil, fmt.Errorf("listeners %s, controller %s: %w", l, ctl, err)
			}
			r.Mode = b.cfg.runName("hybrid")
			if first == nil {
				first = r
			} else {
				prev.Baseline = r
			}
			prev = r
		}
	}
	return first, nil
}
