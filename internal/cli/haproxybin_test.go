package cli

import (
	"bytes"
	"context"
	"errors"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/haproxy-k8s-sync/haproxy-k8s-sync/internal/haproxy"
	"github.com/haproxy-k8s-sync/haproxy-k8s-sync/internal/haproxy/haproxytest"
)

// run refuses to start with an HAProxy older than the supported range or
// built without what the controller needs, naming the version and the
// missing feature, before it drives anything; the binary the tests run
// passes. The refused builds are a stand-in printing the real 2.6 and 3.0
// `haproxy -vv` (internal/haproxy/testdata) with one thing changed.
func TestRunRefusesUnsupportedHAProxy(t *testing.T) {
	read := func(name string) string {
		b, err := os.ReadFile(filepath.Join("..", "haproxy", "testdata", name))
		if err != nil {
			t.Fatal(err)
		}
		return string(b)
	}
	v26, v30 := read("vv-2.6.txt"), read("vv-3.0.txt")
	dir := t.TempDir()
	kubeconfig := unreachableKubeconfig(t, dir)
	for _, tc := range []struct {
		name, vv string
		want     []string
	}{
		{"2.4", strings.Replace(v26, "version 2.6.12-1+deb12u4", "version 2.4.22-1", 1), []string{"HAProxy 2.4.22-1", "older than 2.6"}},
		{"no TPROXY", strings.Replace(v30, " +TPROXY ", " -TPROXY ", 1), []string{"HAProxy 3.0.11-1+deb13u4", "without TPROXY"}},
		{"no OpenSSL", strings.Replace(v26, " +OPENSSL ", " -OPENSSL ", 1), []string{"HAProxy 2.6.12-1+deb12u4", "without OPENSSL"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			bin := filepath.Join(t.TempDir(), "haproxy")
			script := "#!/bin/sh\ncat <<'EOF'\n" + tc.vv + "EOF\n"
			if err := os.WriteFile(bin, []byte(script), 0o755); err != nil {
				t.Fatal(err)
			}
			ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
			defer cancel()
			var log bytes.Buffer
			err := Run(ctx, []string{"--kubeconfig", kubeconfig, "--haproxy-bin", bin,
				"--haproxy-config", filepath.Join(dir, "haproxy.cfg"), "--master-socket", filepath.Join(dir, "master.sock"),
				"--stats-socket", filepath.Join(dir, "stats.sock"), "--state-file", filepath.Join(dir, "state"), "--udp=off"},
				env(nil), &log)
			if !errors.Is(err, haproxy.ErrUnsupported) {
				t.Fatalf("run: %v, want ErrUnsupported\n%s", err, log.String())
			}
			for _, w := range append(tc.want, "--haproxy-bin "+bin) {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("refusal %q does not name %q", err, w)
				}
			}
		})
	}
	f := &runFlags{bin: haproxytest.Bin()}
	var log bytes.Buffer
	if err := f.checkHAProxy(slog.New(slog.NewTextHandler(&log, nil))); err != nil || !strings.Contains(log.String(), "version=") {
		t.Fatalf("%s: %v; log %q", haproxytest.Bin(), err, log.String())
	}
}
