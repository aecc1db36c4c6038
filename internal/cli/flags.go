// Package cli is the command line of haproxy-k8s-sync: flags, environment
// variables and the wiring of each subcommand. cmd/ only calls Main.
package cli

import (
	"errors"
	"flag"
	"fmt"
	"net/netip"
	"strings"
	"time"

	"github.com/haproxy-k8s-sync/haproxy-k8s-sync/internal/desired"
	"github.com/haproxy-k8s-sync/haproxy-k8s-sync/internal/settings"
)

// EnvPrefix starts the environment variable of every flag:
// --bind-address is HAPROXY_K8S_SYNC_BIND_ADDRESS.
const EnvPrefix = "HAPROXY_K8S_SYNC_"

// shape holds the flags that decide what config is produced; `run` and
// `render` share them so that render shows exactly what run would apply.
type shape struct {
	class, service, backend, targets string
	classLess, trackNodes            bool
	binds                            stringList
	defaults                         settings.Settings
	stats, stateFile                 string
	maxConn                          int
	monitor                          netip.AddrPort
	nodeCheck                        nodeCheck
}

type stringList []string

func (l *stringList) String() string { return strings.Join(*l, ",") }
func (l *stringList) Set(v string) error {
	for _, p := range strings.Split(v, ",") {
		if p = strings.TrimSpace(p); p != "" {
			*l = append(*l, p)
		}
	}
	return nil
}

func (s *shape) register(fs *flag.FlagSet) {
	s.defaults = settings.Defaults()
	fs.StringVar(&s.class, "class", desired.DefaultClass, "spec.loadBalancerClass of the LoadBalancer Services to take")
	fs.BoolVar(&s.classLess, "class-less", false, "also take LoadBalancer Services that have no loadBalancerClass")
	fs.StringVar(&s.service, "service", "", "single-Service mode: take only this Service (NAMESPACE/NAME), whatever its type")
	fs.StringVar(&s.backend, "backend-name", "", "single-Service mode: name of the backend (default generated)")
	fs.StringVar(&s.targets, "targets", desired.TargetNodes, "servers are 'nodes' (InternalIP:nodePort) or 'pods' (endpoint IP:targetPort, for routable pod networks)")
	fs.BoolVar(&s.trackNodes, "track-nodes", true, "in node mode, servers without a check of their own (check auto with a --node-check, or false) follow their node through one HAProxy server per node, so a node going out of service or back is one Runtime API command")
	fs.Var(&s.binds, "bind-address", "address frontends listen on (repeatable or comma-separated; default all)")
	fs.StringVar(&s.stats, "stats-socket", "/run/haproxy-k8s-sync/admin.sock", "HAProxy worker admin socket (written into the config)")
	fs.StringVar(&s.stateFile, "state-file", "/var/lib/haproxy-k8s-sync/server-state", "HAProxy server-state-file (written into the config)")
	fs.IntVar(&s.maxConn, "global-maxconn", 0, "global maxconn of HAProxy (0: HAProxy's default)")
	fs.TextVar(&s.monitor, "monitor-address", netip.AddrPort{}, "ADDR:PORT where HAProxy answers GET /healthz with 200 while it runs (liveness probes; default none)")
	s.nodeCheck.register(fs)
	settings.RegisterFlags(fs, &s.defaults)
}

// desiredOptions validates the shape flags.
func (s *shape) desiredOptions() (desired.Options, error) {
	o := desired.Options{Class: s.class, ClassLess: s.classLess, Service: s.service, Backend: s.backend, Targets: s.targets, Defaults: s.defaults, TrackNodes: s.trackNodes}
	var err error
	if o.NodeCheck, err = s.nodeCheck.check(); err != nil {
		return o, err
	}
	if o.LocalHealthCheck, err = s.nodeCheck.localHealthCheck(); err != nil {
		return o, err
	}
	if s.targets != desired.TargetNodes && s.targets != desired.TargetPods {
		return o, fmt.Errorf("--targets: want nodes or pods, got %q", s.targets)
	}
	if s.service != "" {
		if ns, name, ok := strings.Cut(s.service, "/"); !ok || ns == "" || name == "" || strings.Contains(name, "/") {
			return o, fmt.Errorf("--service: want NAMESPACE/NAME, got %q", s.service)
		}
	}
	if s.backend != "" && !desired.ValidBackendName(s.backend) {
		return o, fmt.Errorf("--backend-name: %q is not a valid HAProxy backend name", s.backend)
	}
	for _, b := range s.binds {
		if b == "*" {
			continue
		}
		a, err := netip.ParseAddr(b)
		if err != nil {
			return o, fmt.Errorf("--bind-address: %w", err)
		}
		o.Binds = append(o.Binds, a)
	}
	return o, nil
}

// parse applies environment variables (built-in < env < flag), then the
// command line. getenv is os.Getenv outside tests.
func parse(fs *flag.FlagSet, args []string, getenv func(string) string, s *shape) error {
	if err := settings.FromEnv(&s.defaults, getenv); err != nil {
		return err
	}
	var errs []error
	if err := legacy(getenv, fs); err != nil {
		errs = append(errs, err)
	}
	fs.VisitAll(func(f *flag.Flag) {
		name := EnvPrefix + strings.ToUpper(strings.ReplaceAll(f.Name, "-", "_"))
		if strings.HasPrefix(f.Name, settings.FlagPrefix) {
			return // settings.FromEnv read these with its own grammar
		}
		if v := getenv(name); v != "" {
			if err := fs.Set(f.Name, v); err != nil {
				errs = append(errs, fmt.Errorf("environment variable %s: %w", name, err))
			}
		}
	})
	if len(errs) > 0 {
		return errors.Join(errs...)
	}
	return fs.Parse(args)
}

// legacy maps the environment of the older single-Service sync controller
// onto our flags, so it can be replaced without changing its Deployment.
func legacy(getenv func(string) string, fs *flag.FlagSet) error {
	if name := getenv("INGRESS_SERVICE_NAME"); name != "" && fs.Lookup("service") != nil {
		ns := getenv("INGRESS_NAMESPACE")
		if ns == "" {
			ns = "ingress-nginx"
		}
		_ = fs.Set("service", ns+"/"+name)
	}
	if v := getenv("HAPROXY_BACKEND_NAME"); v != "" && fs.Lookup("backend-name") != nil {
		_ = fs.Set("backend-name", v)
	}
	if v := getenv("RESYNC_PERIOD"); v != "" && fs.Lookup("resync-period") != nil {
		if _, err := time.ParseDuration(v); err != nil {
			return fmt.Errorf("environment variable RESYNC_PERIOD: %w", err)
		}
		_ = fs.Set("resync-period", v)
	}
	legacyDataplane(getenv, fs)
	return nil
}
