package cli

import (
	"bytes"
	"context"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/haproxy-k8s-sync/haproxy-k8s-sync/internal/desired"
	"github.com/haproxy-k8s-sync/haproxy-k8s-sync/internal/testing/golden"
	"github.com/haproxy-k8s-sync/haproxy-k8s-sync/internal/testing/netlab"
)

// render's standard output carries one format: haproxy.cfg by default (a
// valid one, with a note on stderr that UDP ports are left to the kernel),
// the nftables ruleset with --output nftables (golden, and `nft -c -f`
// accepts it); -o DIR writes both files side by side.
func TestRenderUDP(t *testing.T) {
	run := func(args ...string) (string, string) {
		t.Helper()
		var out, errb bytes.Buffer
		if err := renderCmd(append([]string{"-f", "testdata/udp.yaml"}, args...), env(nil), nil, &out, &errb); err != nil {
			t.Fatal(err)
		}
		return out.String(), errb.String()
	}
	ruleset, stderr := run("--output", "nftables")
	golden.Assert(t, "udp.nft", []byte(ruleset))
	if stderr != "" {
		t.Errorf("stderr: %s", stderr)
	}
	if strings.Contains(ruleset, "192.168.1.13") {
		t.Errorf("the excluded node is in the ruleset")
	}
	for _, args := range [][]string{nil, {"--output", "haproxy"}} {
		cfg, stderr := run(args...)
		if strings.Contains(cfg, "51820") || strings.Contains(cfg, "table inet") || !strings.Contains(cfg, "frontend fe_databases_mysql_3306") {
			t.Errorf("%v: stdout is not haproxy.cfg alone:\n%s", args, cfg)
		}
		if !strings.Contains(stderr, "note: 1 UDP Service port(s) are not in haproxy.cfg") {
			t.Errorf("%v: stderr lacks the note on the UDP port: %q", args, stderr)
		}
		golden.HAProxyAccepts(t, []byte(cfg))
	}
	netlab.NFTAccepts(t, []byte(ruleset))

	dir := filepath.Join(t.TempDir(), "out")
	cfg, _ := run("--output", "haproxy")
	if out, _ := run("-o", dir); out != "" {
		t.Errorf("-o DIR wrote to stdout: %q", out)
	}
	for name, want := range map[string]string{renderConfigFile: cfg, renderRulesFile: ruleset} {
		if got, err := os.ReadFile(filepath.Join(dir, name)); err != nil || string(got) != want {
			t.Errorf("-o DIR: %s = %q, %v; want what stdout carries", name, got, err)
		}
	}
}

// --output all, the old default that put both formats on one stream, is
// deprecated: stdout carries haproxy.cfg only.
func TestRenderOutputAllDeprecated(t *testing.T) {
	var out, errb bytes.Buffer
	if err := renderCmd([]string{"-f", "testdata/udp.yaml", "--output", "all"}, env(nil), nil, &out, &errb); err != nil {
		t.Fatal(err)
	}
	if strings.Contains(out.String(), "table inet") || !strings.Contains(errb.String(), "deprecated") {
		t.Errorf("--output all: stdout %q, stderr %q", out.String(), errb.String())
	}
}

func TestRenderOutputFlag(t *testing.T) {
	var out, errb bytes.Buffer
	if err := renderCmd([]string{"-f", "testdata/udp.yaml", "--output", "yaml"}, env(nil), nil, &out, &errb); err == nil || !strings.Contains(err.Error(), "--output") {
		t.Errorf("bad --output: %v", err)
	}
}

// The UDP flags: off skips with a reason for the Event; bad values are
// errors before anything starts.
func TestUDPFlags(t *testing.T) {
	tests := []struct {
		name    string
		flags   udpFlags
		err     string
		skipped string
	}{
		{name: "off", flags: udpFlags{mode: "off", health: "none", interval: time.Second, forward: "require"}, skipped: "--udp=off"},
		{name: "bad mode", flags: udpFlags{mode: "ipvs", health: "none", interval: time.Second, forward: "require"}, err: "--udp:"},
		{name: "bad health", flags: udpFlags{mode: "off", health: "udp:53", interval: time.Second, forward: "require"}, err: "--udp-health"},
		{name: "bad forward", flags: udpFlags{mode: "off", health: "none", interval: time.Second, forward: "yes"}, err: "--udp-ip-forward"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			d, caps, err := tt.flags.setup(context.Background(), slog.New(slog.NewTextHandler(io.Discard, nil)))
			o := caps.shape(desired.Options{})
			switch {
			case tt.err != "":
				if err == nil || !strings.Contains(err.Error(), tt.err) {
					t.Errorf("err = %v, want one naming %s", err, tt.err)
				}
			case err != nil || d != nil || o.UDP || !strings.Contains(o.UDPOff, tt.skipped):
				t.Errorf("setup = %v, %v; options UDP=%v UDPOff=%q", d, err, o.UDP, o.UDPOff)
			}
		})
	}
	var errb bytes.Buffer
	if err := cleanupCmd(nil, env(nil), &errb); err == nil {
		t.Errorf("cleanup without --udp: no error")
	}
}
