package main

import (
	"strconv"

	"github.com/haproxy-k8s-sync/haproxy-k8s-sync/internal/haproxy/haproxytest"
)

// runArgs are the controller's `run` flags for a run of mode (hybrid,
// reload) against h, but the node checks' (nodeCheckArgs).
func (c *config) runArgs(kubeconfig string, h *haproxyProc, mode string) []string {
	args := []string{"run", "--kubeconfig", kubeconfig, "--haproxy-config", h.cfg, "--haproxy-bin", haproxytest.Bin(),
		"--master-socket", h.master, "--stats-socket", h.stats, "--state-file", h.state,
		"--apply", mode, "--default-check=" + strconv.FormatBool(c.checks()),
		"--track-nodes=" + strconv.FormatBool(c.trackNodes),
		"--min-reload-interval", c.minReload.String(), "--reload-settle", c.reloadSettle.String(), "--persist-interval", c.persist.String(), "--log-level", c.logLevel,
		"--metrics-address", "127.0.0.1:0",
		"--udp=off"} // never the host's nftables
	args = append(args, c.listenArgs()...)
	args = append(args, c.quietArgs()...)
	if c.pprof != "" {
		args = append(args, "--pprof-address", c.pprof)
	}
	if c.pools {
		args = append(args, "--address-pools")
	}
	if c.publish != "" {
		args = append(args, "--publish-address", c.publish)
	}
	if c.statusQPS != 0 {
		args = append(args, "--status-qps", strconv.FormatFloat(c.statusQPS, 'f', -1, 64))
	}
	return args
}
