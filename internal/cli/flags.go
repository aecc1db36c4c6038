// Package cli is the command line of haproxy-k8s-sync: its commands
// (cobra), flags (pflag), environment variables and the wiring of each
// command. cmd/ only calls Main.
package cli

import (
	"errors"
	"fmt"
	"net/netip"
	"strings"
	"time"

	"github.com/spf13/pflag"

	"github.com/haproxy-k8s-sync/haproxy-k8s-sync/internal/desired"
	"github.com/haproxy-k8s-sync/haproxy-k8s-sync/internal/render"
	"github.com/haproxy-k8s-sync/haproxy-k8s-sync/internal/settings"
)

// EnvPrefix starts the environment variable of every flag:
// --bind-address is HAPROXY_K8S_SYNC_BIND_ADDRESS.
const EnvPrefix = "HAPROXY_K8S_SYNC_"

// envName is the environment variable of the flag named name.
func envName(name string) string {
	return EnvPrefix + strings.ToUpper(strings.ReplaceAll(name, "-", "_"))
}

// shape holds the flags that decide what config is produced; `run` and
// `render` share them so that render shows exactly what run would apply.
type shape struct {
	class, service, backend, targets string
	classLess, trackNodes            bool
	binds                            stringList
	defaults                         settings.Settings
	defaultsErr                      error // from the environment, reported when the command runs
	stats, stateFile                 string
	maxConn                          int
	quiet                            bool
	monitor                          netip.AddrPort
	nodeCheck                        nodeCheck
	listeners                        listenerFlags // listeners.go
}

// stringList is a repeatable, comma-separated flag.
type stringList []string

func (l *stringList) String() string { return strings.Join(*l, ",") }
func (l *stringList) Type() string   { return "strings" }
func (l *stringList) Set(v string) error {
	for _, p := range strings.Split(v, ",") {
		if p = strings.TrimSpace(p); p != "" {
			*l = append(*l, p)
		}
	}
	return nil
}

// register registers the shape flags, by concern, on fs. getenv feeds
// the Service defaults, which take their environment before the flags
// (settings.FromEnv); an error there is kept for the command to report.
func (s *shape) register(fs *pflag.FlagSet, getenv func(string) string) {
	s.registerServices(fs)
	s.registerDefaults(fs, getenv)
	addGroup(fs, groupChecks, scopeServices, s.nodeCheck.register)
	s.registerHAProxy(fs)
}

// registerServices registers which Services are taken and how they map.
func (s *shape) registerServices(fs *pflag.FlagSet) {
	addGroup(fs, groupServices, scopeServices, func(fs *pflag.FlagSet) {
		fs.StringVar(&s.class, "class", desired.DefaultClass, "spec.loadBalancerClass of the LoadBalancer Services to take")
		fs.BoolVar(&s.classLess, "class-less", false, "also take LoadBalancer Services that have no loadBalancerClass")
		fs.StringVar(&s.service, "service", "", "single-Service mode: take only this Service (NAMESPACE/NAME), whatever its type")
		fs.StringVar(&s.backend, "backend-name", "", "single-Service mode: name of the backend (default generated)")
		fs.StringVar(&s.targets, "targets", desired.TargetNodes, "servers are 'nodes' (InternalIP:nodePort) or 'pods' (endpoint IP:targetPort, for routable pod networks)")
		fs.BoolVar(&s.trackNodes, "track-nodes", true, "in node mode, servers without a check of their own (check auto with a --node-check, or false) follow their node through one HAProxy server per node, so a node going out of service or back is one Runtime API command")
		fs.Var(&s.binds, "bind-address", "address frontends listen on (repeatable or comma-separated; default all)")
	})
}

// registerDefaults registers one --default-<name> flag per Service setting.
func (s *shape) registerDefaults(fs *pflag.FlagSet, getenv func(string) string) {
	s.defaults = settings.Defaults()
	if getenv != nil {
		s.defaultsErr = settings.FromEnv(&s.defaults, getenv)
	}
	addGroup(fs, groupDefaults, scopeServices, func(fs *pflag.FlagSet) { registerGoFlags(fs, settings.RegisterFlags, &s.defaults) })
}

// registerHAProxy registers what of HAProxy's own the config names.
func (s *shape) registerHAProxy(fs *pflag.FlagSet) {
	addGroup(fs, groupHAProxy, scopeLocal, func(fs *pflag.FlagSet) {
		s.stats = "/run/haproxy-k8s-sync/admin.sock"
		fs.Var(pathValue{&s.stats, true}, "stats-socket", "HAProxy worker admin socket (written into the config)")
		fs.Var(countValue{&s.maxConn}, "global-maxconn", "global maxconn of HAProxy (0: HAProxy's default)")
		fs.BoolVar(&s.quiet, "haproxy-quiet", false, "write HAProxy's quiet: no stderr line per server changing state, but no [ALERT] of a first start either (docs/health-checks.md)")
		fs.Var(listenValue{&s.monitor}, "monitor-address", "ADDR:PORT where HAProxy answers GET /healthz with 200 while it runs (liveness probes; default none)")
		s.listeners.register(fs)
	})
	// The state file's directory also keeps the last good settings, for
	// every driver: it belongs to no driver.
	addGroup(fs, groupHAProxy, scopeAll, func(fs *pflag.FlagSet) {
		s.stateFile = "/var/lib/haproxy-k8s-sync/server-state"
		fs.Var(pathValue{&s.stateFile, false}, "state-file", "HAProxy server-state-file (written into the config); its directory also holds the controller's last good settings")
	})
}

// desiredOptions validates the shape flags.
func (s *shape) desiredOptions() (desired.Options, error) {
	o := desired.Options{Class: s.class, ClassLess: s.classLess, Service: s.service, Backend: s.backend, Targets: s.targets, Defaults: s.defaults, TrackNodes: s.trackNodes}
	o.SharedListener = s.listeners.mode == render.ListenersTProxy
	var err error
	if o.NodeCheck, err = s.nodeCheck.check(); err != nil {
		return o, err
	}
	o.CarryNodeCheck = s.nodeCheck.given // where nothing follows a node: compose.go, shape
	if o.LocalHealthCheck, err = s.nodeCheck.localHealthCheck(); err != nil {
		return o, err
	}
	if s.targets != desired.TargetNodes && s.targets != desired.TargetPods {
		return o, flagErr("--targets: want nodes or pods, got %q", s.targets)
	}
	if s.service != "" {
		if ns, name, ok := strings.Cut(s.service, "/"); !ok || ns == "" || name == "" || strings.Contains(name, "/") {
			return o, flagErr("--service: want NAMESPACE/NAME, got %q", s.service)
		}
	}
	if s.backend != "" && !desired.ValidBackendName(s.backend) {
		return o, flagErr("--backend-name: %q is not a valid HAProxy backend name", s.backend)
	}
	for _, b := range s.binds {
		if b == "*" {
			continue
		}
		a, err := netip.ParseAddr(b)
		if err == nil {
			err = checkListenAddr(a)
		}
		if err != nil {
			return o, flagErr("--bind-address: %v", err)
		}
		o.Binds = append(o.Binds, a)
	}
	return o, nil
}

// applyEnv gives every flag not set on the command line the value of its
// environment variable (built-in < legacy variables < HAPROXY_K8S_SYNC_* <
// command line). The Service defaults (--default-*) took theirs when they
// were registered. getenv is os.Getenv outside tests.
func applyEnv(fs *pflag.FlagSet, getenv func(string) string) error {
	var errs []error
	if err := legacy(getenv, fs); err != nil {
		errs = append(errs, err)
	}
	fs.VisitAll(func(f *pflag.Flag) {
		if f.Changed || strings.HasPrefix(f.Name, settings.FlagPrefix) || f.Name == "help" || f.Name == "version" {
			return
		}
		name := envName(f.Name)
		if v := getenv(name); v != "" {
			if err := f.Value.Set(v); err != nil {
				errs = append(errs, fmt.Errorf("environment variable %s: %w", name, err))
			}
		}
	})
	return errors.Join(errs...)
}

// setUnlessGiven sets the flag name, when fs has it and the command line
// did not set it, to v.
func setUnlessGiven(fs *pflag.FlagSet, name, v string) {
	if f := fs.Lookup(name); f != nil && !f.Changed {
		_ = f.Value.Set(v)
	}
}

// legacy maps the environment of the older single-Service sync controller
// onto our flags, so it can be replaced without changing its Deployment.
func legacy(getenv func(string) string, fs *pflag.FlagSet) error {
	if name := getenv("INGRESS_SERVICE_NAME"); name != "" {
		ns := getenv("INGRESS_NAMESPACE")
		if ns == "" {
			ns = "ingress-nginx"
		}
		setUnlessGiven(fs, "service", ns+"/"+name)
	}
	if v := getenv("HAPROXY_BACKEND_NAME"); v != "" {
		setUnlessGiven(fs, "backend-name", v)
	}
	if v := getenv("RESYNC_PERIOD"); v != "" && fs.Lookup("resync-period") != nil {
		if _, err := time.ParseDuration(v); err != nil {
			return fmt.Errorf("environment variable RESYNC_PERIOD: %w", err)
		}
		setUnlessGiven(fs, "resync-period", v)
	}
	legacyDataplane(getenv, fs)
	return nil
}

// parse parses args on fs and applies the environment, as a command does:
// for tests of the flags of a part.
func parse(fs *pflag.FlagSet, args []string, getenv func(string) string, s *shape) error {
	if s != nil && s.defaultsErr != nil {
		return s.defaultsErr
	}
	if err := fs.Parse(normalizeArgs(args, longNames(fs))); err != nil {
		return err
	}
	return applyEnv(fs, getenv)
}
