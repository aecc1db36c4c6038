package cli

import (
	"log/slog"
	"strconv"
	"strings"
	"time"

	"github.com/spf13/pflag"

	"github.com/haproxy-k8s-sync/haproxy-k8s-sync/internal/desired"
	"github.com/haproxy-k8s-sync/haproxy-k8s-sync/internal/model"
)

// nodeCheck holds the flags of the node-level health check: one check per
// node, on its server in the _nodes backend, that the servers following
// their node (--track-nodes, Services without checks of their own) inherit.
type nodeCheck struct {
	spec, local string
	inter       time.Duration
	rise, fall  int
	// given: --node-check was set, on the command line or by its
	// environment variable. Only then do the servers of the Data Plane
	// API's single-Service mode, which follow no node, carry it
	// (desired.Options.CarryNodeCheck); its default there stays the older
	// controller's check of each server's own port.
	given bool
}

// specValue is the value of --node-check: a string that notes it was set.
type specValue struct {
	s     *string
	given *bool
}

func (v specValue) String() string { return *v.s }
func (v specValue) Type() string   { return "string" }
func (v specValue) Set(s string) error {
	*v.s, *v.given = s, true
	return nil
}

// DefaultNodeCheck is the default of --node-check: kube-proxy's health
// endpoint, which answers 200 while the node's kube-proxy is healthy and
// 503 while the node is drained or deleted (KEP-3836).
const DefaultNodeCheck = "http:10256/healthz"

// DefaultLocalCheck is the default of --local-check: a Local Service with
// a healthCheckNodePort is checked there on each server, the one check
// that answers 200 only once the node's kube-proxy serves the Service's
// local endpoint (the node check, kube-proxy's /healthz, answers 200
// seconds before that: a returning node's server served too early and
// lost connections, issue 29). service-port keeps one check per node.
const DefaultLocalCheck = "health-check-node-port"

func (n *nodeCheck) register(fs *pflag.FlagSet) {
	n.spec = DefaultNodeCheck
	fs.Var(specValue{&n.spec, &n.given}, "node-check", "health check of each node, inherited by the servers that follow their node (node mode, Services with check auto or false): "+
		"'http:PORT/PATH' (GET must answer 200; kube-proxy's is http:10256/healthz, 503 while the node is drained or deleted), 'tcp:PORT', or 'none'. "+
		"Every node must answer it, or all of them go down: without kube-proxy's /healthz, use tcp:PORT or none (none: servers with check auto are checked by themselves, as before)")
	fs.DurationVar(&n.inter, "node-check-interval", 2*time.Second, "interval of the node check")
	fs.IntVar(&n.rise, "node-check-rise", 2, "successful node checks before a node is up again")
	fs.IntVar(&n.fall, "node-check-fall", 2, "failed node checks before a node and every server following it is down")
	fs.StringVar(&n.local, "local-check", DefaultLocalCheck, "what checks the servers of externalTrafficPolicy Local Services in node mode: "+
		"'health-check-node-port' (kube-proxy's spec.healthCheckNodePort on each server, with check auto or true: GET / answers 200 once the node's kube-proxy serves a ready local endpoint, as cloud load balancers check; a Service without one is as with service-port) "+
		"or 'service-port' (the node check they follow, or their own nodePort with check true or without a node check: one check per node, but a node's server may serve before its kube-proxy has the Service's endpoint)")
}

// logStart says, once at start, which node check is in effect: a node
// check nothing answers takes every node down, so it must be easy to see.
func (n *nodeCheck) logStart(log *slog.Logger, o desired.Options) {
	switch {
	case !o.NodeCheck.Enabled:
		log.Info("node check: none; servers with check auto are checked by themselves, on their own port")
	case o.CarryNodeCheck && o.Targets != desired.TargetPods:
		log.Info("node check: on each server of the operator's backend (the Data Plane API's single-Service mode: servers follow no node); servers with check auto or false carry it themselves",
			"node-check", n.spec, "interval", n.inter, "rise", n.rise, "fall", n.fall)
	case o.Targets == desired.TargetPods || !o.TrackNodes:
		log.Info("node check: not used (servers do not follow their node here: --targets=pods, --track-nodes=false or the Data Plane API's single-Service mode); servers with check auto are checked by themselves",
			"node-check", n.spec)
	default:
		log.Info("node check: servers with check auto follow their node and its check; every node must answer it, or its servers go down (no kube-proxy /healthz there: --node-check=tcp:PORT or none)",
			"node-check", n.spec, "interval", n.inter, "rise", n.rise, "fall", n.fall)
	}
}

// localHealthCheck validates --local-check.
func (n *nodeCheck) localHealthCheck() (bool, error) {
	switch n.local {
	case "service-port":
		return false, nil
	case "health-check-node-port":
		return true, nil
	}
	return false, flagErr("--local-check: want service-port or health-check-node-port, got %q", n.local)
}

// check validates the flags into the check of the _nodes backend.
func (n *nodeCheck) check() (model.Check, error) {
	if n.spec == "none" || n.spec == "" {
		return model.Check{}, nil
	}
	c := model.Check{Enabled: true, Inter: n.inter, Rise: n.rise, Fall: n.fall}
	if n.inter < 100*time.Millisecond || n.inter > time.Hour {
		return c, flagErr("--node-check-interval: want 100ms to 1h, got %v", n.inter)
	}
	if n.rise < 1 || n.rise > 100 || n.fall < 1 || n.fall > 100 {
		return c, flagErr("--node-check-rise and --node-check-fall: want 1 to 100, got %d and %d", n.rise, n.fall)
	}
	kind, rest, _ := strings.Cut(n.spec, ":")
	port, path := rest, ""
	if kind == "http" {
		if i := strings.IndexByte(rest, '/'); i >= 0 {
			port, path = rest[:i], rest[i:]
		}
		if !model.ValidCheckPath(path) {
			return c, flagErr("--node-check: %q: want http:PORT/PATH with a plain absolute path", n.spec)
		}
		c.HTTP.Path = path
	} else if kind != "tcp" {
		return c, flagErr("--node-check: %q: want http:PORT/PATH, tcp:PORT or none", n.spec)
	}
	p, err := strconv.ParseUint(port, 10, 16)
	if err != nil || p == 0 {
		return c, flagErr("--node-check: %q: bad port %q", n.spec, port)
	}
	c.Port = uint16(p)
	return c, nil
}
