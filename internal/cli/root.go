package cli

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/signal"
	"strings"
	"syscall"

	"github.com/spf13/cobra"
)

// Version is set at build time with -ldflags "-X ...cli.Version=v1.2.3".
var Version = "dev"

// Exit codes.
const (
	exitOK    = 0
	exitError = 1 // the command failed
	exitUsage = 2 // the command line is wrong (unknown command or flag, a flag of another mode)
)

// usageError is a wrong command line: one line saying what is wrong, and a
// hint where to look; it exits with exitUsage.
type usageError struct{ msg, hint string }

func (e usageError) Error() string { return e.msg }

// cmdEnv is what a command reads and writes besides its flags.
type cmdEnv struct {
	ctx            context.Context
	getenv         func(string) string
	stdin          io.Reader
	stdout, stderr io.Writer
}

// Main runs the command line and returns the exit code.
func Main(args []string, stdin io.Reader, stdout, stderr io.Writer) int {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	if len(args) > 0 {
		args = args[1:]
	}
	return exitCode(execute(ctx, args, os.Getenv, stdin, stdout, stderr), stderr)
}

// Exit runs this process's command line (os.Args, the standard streams)
// and exits with its code: cmd/haproxy-k8s-sync's main, and a test binary
// run as the controller (internal/testing/shutdown.Main).
func Exit() { os.Exit(Main(os.Args, os.Stdin, os.Stdout, os.Stderr)) }

// Run is the `run` command with explicit context and environment, for
// tests and embedding: it returns when ctx ends or on a fatal error. Its
// help, if asked for, goes to stderr too.
func Run(ctx context.Context, args []string, getenv func(string) string, stderr io.Writer) error {
	return execute(ctx, append([]string{"run"}, args...), getenv, nil, stderr, stderr)
}

// exitCode reports err on stderr and returns the exit code it means.
func exitCode(err error, stderr io.Writer) int {
	var u usageError
	switch {
	case err == nil, errors.Is(err, context.Canceled):
		return exitOK
	case errors.As(err, &u):
		fmt.Fprintf(stderr, "error: %s\n%s\n", u.msg, u.hint)
		return exitUsage
	}
	fmt.Fprintln(stderr, "error:", err)
	return exitError
}

// execute runs the command line args (without the program name).
func execute(ctx context.Context, args []string, getenv func(string) string, stdin io.Reader, stdout, stderr io.Writer) error {
	e := &cmdEnv{ctx: ctx, getenv: getenv, stdin: stdin, stdout: stdout, stderr: stderr}
	root := newRoot(e)
	root.SetArgs(normalizeArgs(args, longNames(commandFlagSets(root)...)))
	root.SetIn(stdin)
	root.SetOut(stdout)
	root.SetErr(stderr)
	c, err := root.ExecuteContextC(ctx)
	if u := (usageError{}); errors.As(err, &u) && u.hint == "" {
		// A flag's value refused by the command: its flags' help.
		u.hint = fmt.Sprintf("See '%s --help' for its flags.", c.CommandPath())
		return u
	}
	if err != nil && strings.HasPrefix(err.Error(), "unknown command") {
		msg, rest, _ := strings.Cut(err.Error(), "\n")
		hint := "See 'haproxy-k8s-sync --help' for the commands."
		if _, s, ok := strings.Cut(rest, "Did you mean this?\n"); ok {
			hint = "Did you mean " + strings.TrimSpace(strings.Split(s, "\n")[0]) + "? " + hint
		}
		return usageError{msg: msg, hint: hint}
	}
	return err
}

// newRoot is the command tree.
func newRoot(e *cmdEnv) *cobra.Command {
	root := &cobra.Command{
		Use:   "haproxy-k8s-sync",
		Short: "Keep HAProxy in sync with Kubernetes Services",
		Long: `haproxy-k8s-sync makes HAProxy the Kubernetes-aware load balancer of a bare-metal cluster:
it watches LoadBalancer Services, their EndpointSlices and the Nodes, and keeps HAProxy's
frontends, backends and servers in step (through the Runtime API, reloading only for
structure), UDP ports in the kernel (nftables), and the Services' status. It can also
load-balance the kube-apiservers (run --mode=apiserver). See docs/architecture.md.`,
		Example: `  # Drive the local HAProxy from the cluster of the current kubeconfig
  haproxy-k8s-sync run --kubeconfig ~/.kube/config

  # See the haproxy.cfg run would produce for objects in a file
  haproxy-k8s-sync render -f dump.yaml > haproxy.cfg`,
		Version:       Version,
		SilenceErrors: true,
		SilenceUsage:  true,
	}
	root.SetVersionTemplate("{{.Name}} {{.Version}}\n")
	root.SetHelpFunc(writeHelp)
	root.SetFlagErrorFunc(func(c *cobra.Command, err error) error {
		return usageError{msg: err.Error(), hint: fmt.Sprintf("See '%s --help' for its flags.", c.CommandPath())}
	})
	root.AddCommand(newRunCmd(e), newRenderCmd(e), newInitCmd(e), newStatusCmd(e), newCleanupCmd(e), newVersionCmd(e))
	return root
}

// noArgs refuses positional arguments as a usage error.
func noArgs(c *cobra.Command, args []string) error {
	if len(args) > 0 {
		return usageError{msg: fmt.Sprintf("unknown command %q for %q", args[0], c.CommandPath()),
			hint: fmt.Sprintf("See '%s --help'.", c.CommandPath())}
	}
	return nil
}

func newVersionCmd(e *cmdEnv) *cobra.Command {
	return &cobra.Command{
		Use:   "version",
		Short: "Print the version",
		Long:  "Print the version of haproxy-k8s-sync (also: haproxy-k8s-sync --version).",
		Args:  noArgs,
		RunE: func(c *cobra.Command, _ []string) error {
			_, err := fmt.Fprintln(c.OutOrStdout(), "haproxy-k8s-sync", Version)
			return err
		},
	}
}
