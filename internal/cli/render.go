package cli

import (
	"errors"
	"fmt"
	"io"
	"io/fs"
	"maps"
	"os"
	"path/filepath"
	"slices"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"github.com/haproxy-k8s-sync/haproxy-k8s-sync/internal/atomicfile"
	"github.com/haproxy-k8s-sync/haproxy-k8s-sync/internal/desired"
	"github.com/haproxy-k8s-sync/haproxy-k8s-sync/internal/driver/nft"
	"github.com/haproxy-k8s-sync/haproxy-k8s-sync/internal/driver/runtimeapi"
	"github.com/haproxy-k8s-sync/haproxy-k8s-sync/internal/model"
	"github.com/haproxy-k8s-sync/haproxy-k8s-sync/internal/plan"
	"github.com/haproxy-k8s-sync/haproxy-k8s-sync/internal/render"
	"github.com/haproxy-k8s-sync/haproxy-k8s-sync/internal/settings"
)

// Render outputs (--output) and the files of -o DIR.
const (
	outputHAProxy  = "haproxy"  // haproxy.cfg
	outputNFTables = "nftables" // the nftables ruleset of the UDP ports (nft -f syntax)
	outputAll      = "all"      // deprecated: both, which only -o DIR can hold

	renderConfigFile = "haproxy.cfg"
	renderRulesFile  = "udp.nft"
)

func (s *shape) renderOptions() render.Options {
	return render.Options{StatsSocket: s.stats, StateFile: s.stateFile, MaxConn: s.maxConn, Quiet: s.quiet, Monitor: s.monitor,
		Listeners: s.listeners.renderListeners()}
}

type renderFlags struct {
	shape
	files  []string
	output string
	dir    string
	pool   poolFlags
	// headers: the Ingresses' controller-wide header ConfigMaps, read
	// from the input (render_ingress.go).
	headers globalHeaderFlags
}

func newRenderCmd(e *cmdEnv) *cobra.Command {
	var f renderFlags
	c := &cobra.Command{
		Use:   "render -f FILE [-f FILE...] [-o DIR]",
		Short: "Print the haproxy.cfg run would produce for objects read from files",
		Long: `Render reads Kubernetes objects (Services, EndpointSlices, Nodes: YAML or JSON, multi-document
or the List of kubectl get -o yaml; - is stdin) and prints the haproxy.cfg that run, with the
same flags, would produce. Standard output carries one format: haproxy.cfg (--output haproxy,
the default) or the nftables ruleset of the UDP ports (--output nftables); a note on stderr
says when UDP ports are left to the ruleset. -o DIR writes both, haproxy.cfg and udp.nft, side
by side, as run with --haproxy-config DIR/haproxy.cfg would: source ranges in ACL files under
DIR/acl, and no udp.nft (an earlier one removed) when there are no UDP ports.

Problems with single Services go to stderr and the rest still renders (exit 0), as run reports
them in Events. Render exits 1, naming the object or field, whenever what it writes would not be
what run serves: a document that cannot be parsed, lists nested more than 8 deep, an object that
cannot be decoded or is of an API version render does not read, an object of a kind render does not read (Gateway API objects included), a duplicate object, an input with no
objects, a --service naming no Service of the input, or a line too long for HAProxy (more than
~57 source ranges on stdout: use -o DIR); so does a Service the apiserver would not admit (a name
that is no DNS label, a port outside 1-65535). What did render is still printed.`,
		Example: `  # The config run would produce for the cluster's objects
  kubectl get svc,endpointslices,nodes -A -o yaml > dump.yaml
  haproxy-k8s-sync render -f dump.yaml > haproxy.cfg

  # haproxy.cfg and the nftables ruleset of the UDP ports, side by side
  haproxy-k8s-sync render -f dump.yaml -o out/

  # Only the ruleset
  haproxy-k8s-sync render -f dump.yaml --output nftables | nft -c -f -`,
		Args: noArgs,
		RunE: func(c *cobra.Command, _ []string) error {
			if err := finishFlags(c.Flags(), e.getenv, &f.shape); err != nil {
				return err
			}
			f.listeners.offlineListeners(e.stderr) // listenersauto.go
			f.pool.forListeners(f.listeners.mode)
			return f.run(e, c.Flags().Changed("output"))
		},
	}
	fs := c.Flags()
	addGroup(fs, groupInput, scopeAll, func(fs *pflag.FlagSet) {
		fs.StringArrayVarP(&f.files, "file", "f", nil, "file of Kubernetes objects (YAML or JSON, multi-document or List; - for stdin); repeatable")
		fs.StringVar(&f.output, "output", outputHAProxy, "what goes to stdout: haproxy (haproxy.cfg) or nftables (the ruleset of the UDP ports); with -o, the one file to write")
		fs.StringVarP(&f.dir, "output-dir", "o", "", "write "+renderConfigFile+" and "+renderRulesFile+" (when there are UDP ports) into this directory instead of stdout")
	})
	addGroup(fs, groupHAProxy, scopeAll, f.pool.register)
	addGroup(fs, groupIngress, scopeAll, func(fs *pflag.FlagSet) { f.headers.register(fs, "a ConfigMap of the input") })
	f.shape.register(fs, e.getenv)
	c.AddCommand(newStaticPodCmd(e))
	return c
}

// run renders. outputGiven says whether --output was given (with -o, its
// absence means both files).
func (f *renderFlags) run(e *cmdEnv, outputGiven bool) error {
	switch f.output {
	case outputHAProxy, outputNFTables:
	case outputAll:
		fmt.Fprintln(e.stderr, "warning: --output all is deprecated: standard output carries haproxy.cfg only; -o DIR writes both files")
		f.output, outputGiven = outputHAProxy, f.dir == ""
	default:
		return usageError{msg: fmt.Sprintf("--output: want haproxy or nftables, got %q", f.output), hint: "See 'haproxy-k8s-sync render --help'."}
	}
	if len(f.files) == 0 {
		return errors.New("render: at least one -f FILE is needed")
	}
	if err := f.headers.check(); err != nil {
		return err
	}
	opts, err := f.desiredOptions()
	if err != nil {
		return err
	}
	// As run with the HAProxy driver and --udp=nftables.
	opts = driverChoice{kinds: []string{driverHAProxy}}.capabilities(capabilities{udp: true}).shape(opts)
	set, refused, err := loadObjects(f.files, e.stdin, e.stderr)
	if err != nil {
		return err
	}
	if set.Gatewayed() || set.Ingressed() {
		return f.runGateway(e, set, refused, outputGiven) // render_gateway.go, render_ingress.go
	}
	if err := inputMatches(set, opts); err != nil {
		if rerr := refused.err(); rerr != nil && len(set.Services) == 0 {
			return rerr // nothing read: say why
		}
		return err
	}
	in := desired.Input{Services: set.Services, Slices: desired.SlicesOf(set.EndpointSlices), Nodes: set.Nodes}
	var poolProblems []desired.Problem
	if len(set.AddressPools) > 0 {
		// As run --address-pools: each Service on its own addresses.
		in.Addresses, poolProblems = renderAllocation(set, opts, e.stderr)
		opts.Pooled = true
	}
	res := desired.Compute(in, opts)
	invalid := 0
	for _, p := range slices.Concat(res.Problems, poolProblems) {
		fmt.Fprintf(e.stderr, "warning: Service %s: %s: %s\n", settings.ShowName(p.Service.Namespace+"/"+p.Service.Name), p.Reason, p.Message)
		if p.Reason == desired.ReasonInvalidService {
			invalid++
		}
	}
	for _, s := range res.Skipped {
		fmt.Fprintln(e.stderr, "warning: address skipped:", s)
	}
	ropts := f.renderOptions()
	if f.dir != "" {
		// As run with --haproxy-config DIR/haproxy.cfg: source ranges in
		// files beside it.
		ropts.ACLDir = runtimeapi.ACLDir(filepath.Join(f.dir, renderConfigFile))
	}
	// With --listeners=tproxy, the listener's maps are in that directory,
	// or on stdout beside run's default --haproxy-config (listeners.go).
	ropts = f.listeners.options(ropts, defaultConfigPath)
	if res.Config, err = f.pool.view(res.Config, ropts.ListenedFunc()); err != nil {
		return err
	}
	layout, _ := plan.Assign(res.Config, nil, true)
	cfg := render.Config(res.Config, layout, ropts)
	rules := renderUDP(res.Config.UDP)
	if err := fitsHAProxy(cfg, res.Config, f.dir != ""); err != nil {
		return err
	}
	if f.dir != "" {
		err = f.write(cfg, rules, runtimeapi.PatternFiles(res.Config, ropts), ropts.ACLDir, len(res.Config.UDP) > 0, outputGiven, e.stderr)
		if err == nil {
			err = f.writeListenerRules(res.Config, ropts, e.stderr)
		}
	} else if f.output == outputNFTables {
		_, err = e.stdout.Write(rules)
	} else {
		_, err = e.stdout.Write(cfg)
		if n := len(res.Config.UDP); n > 0 && err == nil {
			fmt.Fprintf(e.stderr, "note: %d UDP Service port(s) are not in haproxy.cfg: the kernel balances them (nftables); --output nftables prints their ruleset, -o DIR writes it beside haproxy.cfg\n", n)
		}
	}
	if err != nil {
		return err
	}
	if invalid > 0 {
		return fmt.Errorf("render: %d Service(s) are not what the apiserver admits (see the warnings); the config above lacks them", invalid)
	}
	return refused.err()
}

// write writes the files of -o DIR: both, or the one --output names;
// haproxy.cfg with the pattern files it reads (files, in aclDir). What an
// earlier render left there and this one does not write is removed: a
// udp.nft when there are no UDP ports, pattern files of frontends gone.
func (f *renderFlags) write(cfg, rules []byte, files map[string][]byte, aclDir string, udp, outputGiven bool, stderr io.Writer) error {
	if err := os.MkdirAll(f.dir, 0o755); err != nil {
		return err
	}
	if !outputGiven || f.output == outputHAProxy {
		if len(files) > 0 {
			if err := os.MkdirAll(aclDir, 0o755); err != nil {
				return err
			}
		}
		for _, p := range slices.Sorted(maps.Keys(files)) {
			if err := atomicfile.Write(p, files[p], 0o644); err != nil {
				return err
			}
		}
		if err := removeStale(aclDir, files, stderr); err != nil {
			return err
		}
		if err := atomicfile.Write(filepath.Join(f.dir, renderConfigFile), cfg, 0o644); err != nil {
			return err
		}
		fmt.Fprintln(stderr, "wrote", filepath.Join(f.dir, renderConfigFile), "and", len(files), "pattern file(s)")
	}
	nft := filepath.Join(f.dir, renderRulesFile)
	switch {
	case (!outputGiven && udp) || (outputGiven && f.output == outputNFTables):
		if err := atomicfile.Write(nft, rules, 0o644); err != nil {
			return err
		}
		fmt.Fprintln(stderr, "wrote", nft)
	case !outputGiven:
		// No UDP ports: a udp.nft left from an earlier render would not
		// match the new haproxy.cfg.
		if err := os.Remove(nft); err == nil {
			fmt.Fprintln(stderr, "removed", nft, "(no UDP ports)")
		} else if !errors.Is(err, fs.ErrNotExist) {
			return err
		}
	}
	return nil
}

// renderUDP is the ruleset of the UDP ports.
func renderUDP(udp []model.UDPService) []byte {
	return nft.Render(nft.Plan(udp, nil, nil))
}

func newInitCmd(e *cmdEnv) *cobra.Command {
	var s shape
	var path, from string
	var force bool
	c := &cobra.Command{
		Use:   "init",
		Short: "Write a minimal haproxy.cfg so HAProxy can start before the first sync",
		Long: `Init writes a haproxy.cfg with no Services (or a copy of --from), and creates the directories
HAProxy needs for its admin socket and server-state file, so that HAProxy can start before
run's first pass. An existing config is kept unless --force.`,
		Example: `  haproxy-k8s-sync init --haproxy-config /etc/haproxy/haproxy.cfg
  haproxy-k8s-sync init --force --from /seed/haproxy.cfg --haproxy-config /run/hks/haproxy.cfg`,
		Args: noArgs,
		RunE: func(c *cobra.Command, _ []string) error {
			if err := finishFlags(c.Flags(), e.getenv, &s); err != nil {
				return err
			}
			s.listeners.offlineListeners(e.stderr) // listenersauto.go
			if _, err := s.desiredOptions(); err != nil {
				return err // the shape's flags, checked as run checks them
			}
			if _, err := os.Stat(path); err == nil && !force {
				return fmt.Errorf("%s exists; use --force to overwrite", path)
			}
			ropts := s.listeners.options(s.renderOptions(), path)
			if ropts.TProxy() {
				ropts = withCertDir(ropts, path) // run's (wrapListeners): the fixed HTTPS listener
			}
			cfg := render.Empty(ropts)
			if err := initListenerMaps(ropts); err != nil {
				return err
			}
			if from != "" {
				var err error
				if cfg, err = os.ReadFile(from); err != nil {
					return err
				}
			}
			for _, dir := range []string{filepath.Dir(s.stats), filepath.Dir(s.stateFile), filepath.Dir(path)} {
				if err := os.MkdirAll(dir, 0o750); err != nil {
					return err
				}
			}
			return os.WriteFile(path, cfg, 0o644)
		},
	}
	fs := c.Flags()
	addGroup(fs, groupHAProxy, scopeAll, func(fs *pflag.FlagSet) {
		fs.StringVar(&path, "haproxy-config", "/etc/haproxy/haproxy.cfg", "where to write the config")
		fs.BoolVar(&force, "force", false, "overwrite an existing config")
		fs.StringVar(&from, "from", "", "copy this config instead of writing one with no Services (the seed of render static-pod --live)")
	})
	s.register(fs, e.getenv)
	return c
}

// finishFlags applies the environment to the flags the command line did
// not set, and reports what the Service defaults' environment got wrong.
func finishFlags(fs *pflag.FlagSet, getenv func(string) string, s *shape) error {
	err := applyEnv(fs, getenv)
	if s != nil && s.defaultsErr != nil {
		err = s.defaultsErr
	}
	var u usageError
	if err != nil && !errors.As(err, &u) {
		err = usageError{msg: err.Error()} // a value from the environment: as wrong as a flag's
	}
	return err
}
