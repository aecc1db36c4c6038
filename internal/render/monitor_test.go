package render

import (
	"net"
	"net/http"
	"net/netip"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/haproxy-k8s-sync/haproxy-k8s-sync/internal/haproxy/haproxytest"
	"github.com/haproxy-k8s-sync/haproxy-k8s-sync/internal/testing/golden"
)

func TestMonitorFrontend(t *testing.T) {
	opts := Options{StatsSocket: "/run/hks/admin.sock", Monitor: netip.MustParseAddrPort("127.0.0.1:9444")}
	got := Empty(opts)
	golden.Assert(t, "monitor.cfg", got)
	golden.HAProxyAccepts(t, got)
	if StructureHash(sample(), nil, opts) == StructureHash(sample(), nil, Options{StatsSocket: opts.StatsSocket}) {
		t.Error("the monitor frontend does not change the structure hash: adding it would not reload")
	}
}

// A real HAProxy answers the monitor URI with 200: what a liveness probe sees.
func TestMonitorAnswers(t *testing.T) {
	l, err := net.Listen("tcp", "127.85.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := netip.MustParseAddrPort(l.Addr().String())
	l.Close()
	dir := t.TempDir()
	cfg := filepath.Join(dir, "haproxy.cfg")
	if err := os.WriteFile(cfg, Empty(Options{StatsSocket: haproxytest.StatsSocketPath(dir), Monitor: addr}), 0o644); err != nil {
		t.Fatal(err)
	}
	haproxytest.Start(t, dir, cfg)
	client := &http.Client{Timeout: 2 * time.Second}
	for _, tc := range []struct {
		path string
		want int
	}{{MonitorURI, http.StatusOK}, {"/other", http.StatusServiceUnavailable}} {
		resp, err := client.Get("http://" + addr.String() + tc.path)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != tc.want {
			t.Errorf("GET %s: %d, want %d", tc.path, resp.StatusCode, tc.want)
		}
	}
}
