package cli

import (
	"context"
	"io"

	"github.com/spf13/pflag"
)

// The commands as functions of their arguments, for tests.

func renderCmd(args []string, getenv func(string) string, stdin io.Reader, stdout, stderr io.Writer) error {
	return execute(context.Background(), append([]string{"render"}, args...), getenv, stdin, stdout, stderr)
}

func staticPodCmd(args []string, getenv func(string) string, stdout, stderr io.Writer) error {
	return execute(context.Background(), append([]string{"render", "static-pod"}, args...), getenv, nil, stdout, stderr)
}

func initCmd(args []string, getenv func(string) string, stderr io.Writer) error {
	return execute(context.Background(), append([]string{"init"}, args...), getenv, nil, stderr, stderr)
}

func cleanupCmd(args []string, getenv func(string) string, stderr io.Writer) error {
	return execute(context.Background(), append([]string{"cleanup"}, args...), getenv, nil, stderr, stderr)
}

// newFlagSet is an empty flag set for tests of one part's flags.
func newFlagSet(name string) *pflag.FlagSet {
	fs := pflag.NewFlagSet(name, pflag.ContinueOnError)
	fs.SetOutput(io.Discard)
	return fs
}
