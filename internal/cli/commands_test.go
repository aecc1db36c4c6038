package cli

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/haproxy-k8s-sync/haproxy-k8s-sync/internal/testing/golden"
)

// main runs a command line as the binary does and returns its exit code,
// stdout and stderr.
func mainOf(args ...string) (int, string, string) {
	var out, errb bytes.Buffer
	code := exitCode(execute(context.Background(), args, env(nil), nil, &out, &errb), &errb)
	return code, out.String(), errb.String()
}

// Every command's help goes to stdout (so `| less` shows it), exits 0, and
// says what the command does, with examples and its flags grouped by
// concern: golden files (go test -update).
func TestHelpGolden(t *testing.T) {
	for _, tc := range []struct {
		args []string
		file string
	}{
		{[]string{"--help"}, "root.txt"},
		{nil, "root.txt"},
		{[]string{"help", "run"}, "run.txt"},
		{[]string{"run", "--help"}, "run.txt"},
		{[]string{"run", "-h"}, "run.txt"},
		{[]string{"run", "-help"}, "run.txt"},
		{[]string{"render", "--help"}, "render.txt"},
		{[]string{"render", "static-pod", "--help"}, "static-pod.txt"},
		{[]string{"init", "--help"}, "init.txt"},
		{[]string{"status", "--help"}, "status.txt"},
		{[]string{"cleanup", "--help"}, "cleanup.txt"},
		{[]string{"version", "--help"}, "version.txt"},
	} {
		t.Run(strings.Join(tc.args, " "), func(t *testing.T) {
			code, out, errb := mainOf(tc.args...)
			if code != 0 || errb != "" {
				t.Fatalf("exit %d, stderr %q", code, errb)
			}
			golden.Assert(t, filepath.Join("help", tc.file), []byte(out))
		})
	}
}

func TestRunHelpGroupsFlagsByConcern(t *testing.T) {
	_, out, _ := mainOf("run", "--help")
	last := -1
	for _, heading := range []string{"Examples:", "Mode and driver:", "Kubernetes:", "Services (--mode=services):", "Health checks (--mode=services):",
		"HAProxy:", "Data Plane API (", "UDP (--mode=services):", "apiserver mode (--mode=apiserver):",
		"LoadBalancer status and leader election (--mode=services):", "Observability:"} {
		i := strings.Index(out, "\n"+heading)
		if i < 0 || i < last {
			t.Errorf("heading %q missing or out of order", heading)
		}
		last = i
	}
}

func TestVersion(t *testing.T) {
	for _, args := range [][]string{{"--version"}, {"version"}} {
		code, out, _ := mainOf(args...)
		if code != 0 || out != "haproxy-k8s-sync "+Version+"\n" {
			t.Errorf("%v: exit %d, %q", args, code, out)
		}
	}
}

func TestCompletion(t *testing.T) {
	for _, shell := range []string{"bash", "zsh", "fish"} {
		code, out, _ := mainOf("completion", shell)
		if code != 0 || !strings.Contains(out, "haproxy-k8s-sync") || len(out) < 1000 {
			t.Errorf("completion %s: exit %d, %d bytes", shell, code, len(out))
		}
	}
}

// A wrong command line gets one line saying what is wrong and one hint,
// and exits 2, before anything runs.
func TestUsageErrors(t *testing.T) {
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"rnu"}, `unknown command "rnu"`},
		{[]string{"run", "--no-such-flag"}, "unknown flag: --no-such-flag"},
		{[]string{"run", "-no-such-flag"}, "unknown shorthand flag"},
		{[]string{"run", "extra"}, `unknown command "extra"`},
		{[]string{"render", "static", "-f", "x"}, `unknown command "static"`},
		{[]string{"run", "--mode=apiserver", "--dataplane-url=http://127.0.0.1:5555", "--udp=nftables", "--publish-address=192.0.2.1"},
			"--dataplane-url is a flag of --mode=services"},
		{[]string{"run", "--mode=apiserver", "--udp=off"}, "--udp is a flag of --mode=services"},
		{[]string{"run", "--listen", ":6443"}, "--listen is a flag of --mode=apiserver"},
		{[]string{"run", "--dataplane-url=http://127.0.0.1:5555", "--master-socket", "/x"}, "--master-socket is a flag of a local HAProxy"},
		{[]string{"run", "--driver=haproxy", "--dataplane-timeout", "1s"}, "--dataplane-timeout is a flag of the Data Plane API driver"},
		{[]string{"render", "-f", "testdata/udp.yaml", "--output", "yaml"}, "--output: want haproxy or nftables"},
		{[]string{"status", "--global-maxconn", "many"}, "invalid argument"},
	} {
		t.Run(strings.Join(tc.args, " "), func(t *testing.T) {
			code, out, errb := mainOf(tc.args...)
			if code != exitUsage || out != "" {
				t.Errorf("exit %d (want %d), stdout %q", code, exitUsage, out)
			}
			lines := strings.Split(strings.TrimSuffix(errb, "\n"), "\n")
			if len(lines) != 2 || !strings.HasPrefix(lines[0], "error: ") || !strings.Contains(lines[0], tc.want) {
				t.Errorf("stderr %q, want one error line containing %q and one hint", errb, tc.want)
			}
		})
	}
}

// Flags set through the environment are not refused for their mode: one
// environment may serve several units.
func TestOtherModesFlagFromEnvironment(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	err := Run(ctx, []string{"--mode=apiserver", "--bootstrap-servers", "x:y:z"}, env(map[string]string{"HAPROXY_K8S_SYNC_UDP": "off"}), &bytes.Buffer{})
	if err == nil || !strings.Contains(err.Error(), "--bootstrap-servers") {
		t.Errorf("got %v, want the bootstrap servers' error, not one about --udp", err)
	}
}

// A long flag written with one dash, as the standard library's flag
// package took it, still works: units, scripts and docs use that spelling.
func TestSingleDashLongFlags(t *testing.T) {
	dir := t.TempDir()
	cfg := filepath.Join(dir, "haproxy.cfg")
	code, _, errb := mainOf("init", "-haproxy-config", cfg, "-stats-socket="+filepath.Join(dir, "admin.sock"), "-state-file", filepath.Join(dir, "state"))
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errb)
	}
	b, err := os.ReadFile(cfg)
	if err != nil || !bytes.Contains(b, []byte(filepath.Join(dir, "admin.sock"))) {
		t.Errorf("config %q, %v", b, err)
	}
	if got := normalizeArgs([]string{"-f", "-o", "--", "-haproxy-config"}, map[string]bool{"haproxy-config": true, "f": true}); strings.Join(got, " ") != "-f -o -- -haproxy-config" {
		t.Errorf("normalizeArgs changed shorthands or what follows --: %v", got)
	}
}
