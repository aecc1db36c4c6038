package cli

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"path/filepath"
	"syscall"

	"github.com/haproxy-k8s-sync/haproxy-k8s-sync/internal/desired"
	"github.com/haproxy-k8s-sync/haproxy-k8s-sync/internal/objects"
	"github.com/haproxy-k8s-sync/haproxy-k8s-sync/internal/plan"
	"github.com/haproxy-k8s-sync/haproxy-k8s-sync/internal/render"
)

// Version is set at build time with -ldflags "-X ...cli.Version=v1.2.3".
var Version = "dev"

const usage = `haproxy-k8s-sync keeps HAProxy in sync with Kubernetes Services.

Usage:
  haproxy-k8s-sync run     [flags]   watch the cluster and drive HAProxy
  haproxy-k8s-sync render  -f FILE   print the haproxy.cfg that run would produce for these objects
  haproxy-k8s-sync render static-pod [flags]
                                     the node-local kube-apiserver proxy: static pod manifest and haproxy.cfg
  haproxy-k8s-sync init    [flags]   write a minimal haproxy.cfg so HAProxy can start before the first sync
  haproxy-k8s-sync status  [-o json] what the running HAProxy serves per Service port (exit 1: down or out of sync)
  haproxy-k8s-sync cleanup --udp     delete the nftables table of the UDP ports (a normal stop leaves it)
  haproxy-k8s-sync version

Run "haproxy-k8s-sync COMMAND -h" for a command's flags. Every flag can also
be set with an environment variable: HAPROXY_K8S_SYNC_ + the flag name in
upper case with - as _ (a flag on the command line wins).
`

// Main runs the command line and returns the exit code.
func Main(args []string, stdin io.Reader, stdout, stderr io.Writer) int {
	if len(args) < 2 {
		fmt.Fprint(stderr, usage)
		return 2
	}
	var err error
	switch args[1] {
	case "run":
		ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
		defer stop()
		err = runCmd(ctx, args[2:], os.Getenv, stderr)
	case "render":
		if len(args) > 2 && args[2] == "static-pod" {
			err = staticPodCmd(args[3:], os.Getenv, stdout, stderr)
			break
		}
		err = renderCmd(args[2:], os.Getenv, stdin, stdout, stderr)
	case "init":
		err = initCmd(args[2:], os.Getenv, stderr)
	case "status":
		err = statusCmd(context.Background(), args[2:], os.Getenv, stdout, stderr)
	case "cleanup":
		err = cleanupCmd(args[2:], os.Getenv, stderr)
	case "version":
		fmt.Fprintln(stdout, "haproxy-k8s-sync", Version)
	case "-h", "--help", "help":
		fmt.Fprint(stdout, usage)
	default:
		fmt.Fprintf(stderr, "unknown command %q\n\n%s", args[1], usage)
		return 2
	}
	switch {
	case err == nil, errors.Is(err, context.Canceled):
		return 0
	case errors.Is(err, flag.ErrHelp):
		return 0
	}
	fmt.Fprintln(stderr, "error:", err)
	return 1
}

func newFlagSet(name string, stderr io.Writer) *flag.FlagSet {
	fs := flag.NewFlagSet(name, flag.ContinueOnError)
	fs.SetOutput(stderr)
	return fs
}

func (s *shape) renderOptions() render.Options {
	return render.Options{StatsSocket: s.stats, StateFile: s.stateFile, MaxConn: s.maxConn, Monitor: s.monitor}
}

type fileList []string

func (l *fileList) String() string     { return fmt.Sprint(*l) }
func (l *fileList) Set(v string) error { *l = append(*l, v); return nil }

// renderCmd prints the config for objects read from files; problems with
// single objects go to stderr and the rest still renders. A document that
// cannot be read or parsed at all also makes it fail (after printing what
// did render), so a script writing the output to haproxy.cfg notices.
func renderCmd(args []string, getenv func(string) string, stdin io.Reader, stdout, stderr io.Writer) error {
	fs := newFlagSet("render", stderr)
	var s shape
	s.register(fs)
	var files fileList
	fs.Var(&files, "f", "file of Kubernetes objects (YAML or JSON, multi-document or List; - for stdin); repeatable")
	output := fs.String("output", outputAll, "all: haproxy.cfg, then the nftables ruleset of the UDP ports if any; haproxy; nftables")
	if err := parse(fs, args, getenv, &s); err != nil {
		return err
	}
	if err := validOutput(*output); err != nil {
		return err
	}
	if len(files) == 0 {
		return errors.New("render: at least one -f FILE is needed")
	}
	opts, err := s.desiredOptions()
	if err != nil {
		return err
	}
	opts.UDP = true // as run with --udp=nftables
	var set objects.Set
	unparsed := 0
	for _, f := range files {
		var r io.Reader = stdin
		if f != "-" {
			fh, err := os.Open(f)
			if err != nil {
				return err
			}
			defer fh.Close()
			r = fh
		}
		got, errs := objects.Load(r, f)
		for _, e := range errs {
			fmt.Fprintln(stderr, "warning:", e)
			if errors.Is(e, objects.ErrSyntax) || errors.Is(e, objects.ErrRead) {
				unparsed++
			}
		}
		set.Merge(got)
	}
	res := desired.Compute(desired.Input{Services: set.Services, Slices: desired.SlicesOf(set.EndpointSlices), Nodes: set.Nodes}, opts)
	for _, p := range res.Problems {
		fmt.Fprintf(stderr, "warning: Service %s/%s: %s: %s\n", p.Service.Namespace, p.Service.Name, p.Reason, p.Message)
	}
	if *output != outputNFTables {
		layout, _ := plan.Assign(res.Config, nil, true)
		if _, err = stdout.Write(render.Config(res.Config, layout, s.renderOptions())); err != nil {
			return err
		}
	}
	if *output == outputNFTables || (*output == outputAll && len(res.Config.UDP) > 0) {
		if err := renderUDP(stdout, res.Config.UDP); err != nil {
			return err
		}
	}
	if unparsed > 0 {
		return fmt.Errorf("render: %w: %d document(s) could not be parsed (see the warnings); the config above lacks them", objects.ErrSyntax, unparsed)
	}
	return nil
}

// initCmd writes a config with no Services, and the directories HAProxy
// needs for its socket and state file.
func initCmd(args []string, getenv func(string) string, stderr io.Writer) error {
	fs := newFlagSet("init", stderr)
	var s shape
	s.register(fs)
	path := fs.String("haproxy-config", "/etc/haproxy/haproxy.cfg", "where to write the config")
	force := fs.Bool("force", false, "overwrite an existing config")
	from := fs.String("from", "", "copy this config instead of writing one with no Services (the seed of render static-pod --live)")
	if err := parse(fs, args, getenv, &s); err != nil {
		return err
	}
	if _, err := os.Stat(*path); err == nil && !*force {
		return fmt.Errorf("%s exists; use --force to overwrite", *path)
	}
	cfg := render.Empty(s.renderOptions())
	if *from != "" {
		var err error
		if cfg, err = os.ReadFile(*from); err != nil {
			return err
		}
	}
	for _, dir := range []string{filepath.Dir(s.stats), filepath.Dir(s.stateFile), filepath.Dir(*path)} {
		if err := os.MkdirAll(dir, 0o750); err != nil {
			return err
		}
	}
	return os.WriteFile(*path, cfg, 0o644)
}
