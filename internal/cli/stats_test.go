package cli

import (
	"bytes"
	"log/slog"
	"net/netip"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/haproxy-k8s-sync/haproxy-k8s-sync/internal/render"
)

func TestStatsFlags(t *testing.T) {
	dir := t.TempDir()
	good := filepath.Join(dir, "good")
	open := filepath.Join(dir, "open")
	bad := filepath.Join(dir, "bad")
	for path, c := range map[string]struct {
		content string
		mode    os.FileMode
	}{good: {"ops:s3cret-pa55\n", 0o600}, open: {"ops:s3cret-pa55", 0o644}, bad: {"ops:has space-pa55\n", 0o600}} {
		if err := os.WriteFile(path, []byte(c.content), c.mode); err != nil {
			t.Fatal(err)
		}
		if err := os.Chmod(path, c.mode); err != nil {
			t.Fatal(err)
		}
	}
	for _, tc := range []struct {
		name     string
		flags    statsFlags
		monitor  string // --monitor-address
		wantBind string // bind rendered, "" when off
		wantErr  string
		wantWarn bool
	}{
		{name: "off", flags: statsFlags{}},
		{name: "all addresses without credentials: loopback", flags: statsFlags{addr: ":8404"}, wantBind: "127.0.0.1:8404"},
		{name: "loopback IP", flags: statsFlags{addr: "[::1]:8404"}, wantBind: "[::1]:8404"},
		{name: "public without credentials", flags: statsFlags{addr: "192.0.2.1:8404"}, wantErr: "not a loopback address"},
		{name: "public on purpose", flags: statsFlags{addr: ":8404", public: true}, wantBind: ":8404"},
		{name: "credentials", flags: statsFlags{addr: ":8404", authFile: good}, wantBind: ":8404"},
		{name: "readable by others: warned", flags: statsFlags{addr: "192.0.2.1:8404", authFile: open}, wantBind: "192.0.2.1:8404", wantWarn: true},
		{name: "invalid password", flags: statsFlags{addr: ":8404", authFile: bad}, wantErr: "password must be"},
		{name: "missing file", flags: statsFlags{addr: ":8404", authFile: filepath.Join(dir, "none")}, wantErr: "no such file"},
		{name: "file without address", flags: statsFlags{authFile: good}, wantErr: "needs --stats-address"},
		{name: "bad port", flags: statsFlags{addr: ":http"}, wantErr: "invalid port"},
		{name: "host name", flags: statsFlags{addr: "localhost:8404"}, wantErr: "want an IP address"},
		{name: "the monitor's address", flags: statsFlags{addr: ":8404"}, monitor: "127.0.0.1:8404", wantErr: "same address"},
		{name: "beside the monitor", flags: statsFlags{addr: ":8405"}, monitor: "127.0.0.1:8404", wantBind: "127.0.0.1:8405"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var logs bytes.Buffer
			var opts render.Options
			if tc.monitor != "" {
				opts.Monitor = netip.MustParseAddrPort(tc.monitor)
			}
			f := tc.flags
			err := f.resolve(&opts, slog.New(slog.NewTextHandler(&logs, nil)))
			if tc.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
					t.Fatalf("err = %v, want %q", err, tc.wantErr)
				}
			} else if err != nil {
				t.Fatal(err)
			}
			cfg := string(render.Empty(opts))
			if tc.wantBind == "" {
				if strings.Contains(cfg, render.StatsFrontend) {
					t.Errorf("stats frontend rendered:\n%s", cfg)
				}
			} else if !strings.Contains(cfg, "\tbind "+tc.wantBind+"\n") {
				t.Errorf("want bind %s in:\n%s", tc.wantBind, cfg)
			}
			if warned := strings.Contains(logs.String(), "mode 600"); warned != tc.wantWarn {
				t.Errorf("warned %v, want %v: %s", warned, tc.wantWarn, logs.String())
			}
			if strings.Contains(logs.String(), "s3cret") || (err != nil && strings.Contains(err.Error(), "s3cret")) {
				t.Errorf("a password reached the log or the error")
			}
		})
	}
}
