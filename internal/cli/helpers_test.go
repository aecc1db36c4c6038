package cli

import (
	"context"
	"io"
	"os"
	"path/filepath"
	"testing"

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

// unreachableKubeconfig writes dir/kubeconfig naming an apiserver nothing
// answers (127.0.0.1:1), for tests of run that end before it is asked.
func unreachableKubeconfig(t *testing.T, dir string) string {
	t.Helper()
	p := filepath.Join(dir, "kubeconfig")
	if err := os.WriteFile(p, []byte(`apiVersion: v1
kind: Config
clusters: [{name: c, cluster: {server: "http://127.0.0.1:1"}}]
users: [{name: u, user: {token: t}}]
contexts: [{name: x, context: {cluster: c, user: u}}]
current-context: x
`), 0o600); err != nil {
		t.Fatal(err)
	}
	return p
}
