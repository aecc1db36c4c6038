package e2e

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/haproxy-k8s-sync/haproxy-k8s-sync/internal/cli"
	"github.com/haproxy-k8s-sync/haproxy-k8s-sync/internal/haproxy/haproxytest"
)

// run --mode=apiserver serves the metrics of its passes on
// --metrics-address (driver="apiserver", its own workqueue), /healthz and
// /readyz, and HAProxy's stats page on --stats-address. A static source
// against a real HAProxy: no cluster needed.
func TestAPIServerModeMetrics(t *testing.T) {
	dir := t.TempDir()
	cfgPath := filepath.Join(dir, "haproxy.cfg")
	if err := os.WriteFile(cfgPath, []byte(haproxytest.MinimalConfig(dir)), 0o644); err != nil {
		t.Fatal(err)
	}
	hap := haproxytest.Start(t, dir, cfgPath)
	ip := fmt.Sprintf("127.87.%d.%d", 1+rand.IntN(250), 1+rand.IntN(250))
	// The "apiserver": accepts and closes (the checks are TCP connects).
	backend, err := net.Listen("tcp", net.JoinHostPort(ip, "0"))
	if err != nil {
		t.Fatal(err)
	}
	defer backend.Close()
	go func() {
		for {
			c, err := backend.Accept()
			if err != nil {
				return
			}
			c.Close()
		}
	}()
	listen, metricsAddr, statsAddr := freeAddr(t, ip), freeAddr(t, ip), freeAddr(t, ip)
	args := []string{"--mode", "apiserver", "--apiserver-sources", "static", "--bootstrap-servers", backend.Addr().String(),
		"--listen", listen, "--haproxy-config", cfgPath, "--haproxy-bin", haproxytest.Bin(),
		"--master-socket", hap.MasterSocket, "--stats-socket", hap.StatsSocket,
		"--state-file", filepath.Join(dir, "state"), "--apiserver-state-file", filepath.Join(dir, "apiservers.json"),
		"--metrics-address", metricsAddr, "--stats-address", statsAddr, "--min-reload-interval", "100ms"}
	ctx, cancel := context.WithCancel(bg)
	done := make(chan error, 1)
	var log haproxytest.LockedBuffer
	go func() { done <- cli.Run(ctx, args, func(string) string { return "" }, &log) }()
	t.Cleanup(func() {
		cancel()
		if err := <-done; err != nil && !errors.Is(err, context.Canceled) {
			t.Errorf("controller: %v", err)
		}
		if t.Failed() {
			t.Logf("controller log:\n%s", log.String())
		}
	})

	e := &env{t: t}
	base := "http://" + metricsAddr
	e.eventually("/healthz", httpStatus(base+"/healthz", 200))
	e.eventually("/readyz", httpStatus(base+"/readyz", 200))
	m := &scraper{url: base + "/metrics"}
	for series, want := range map[string]float64{
		`haproxy_k8s_sync_pass_duration_seconds{driver="apiserver",outcome="applied"}`: 1,
		`haproxy_k8s_sync_servers{driver="apiserver",state="ready"}`:                   1,
		`haproxy_k8s_sync_frontends{driver="apiserver"}`:                               1,
		`haproxy_k8s_sync_workqueue_adds_total{name="haproxy-k8s-sync-apiserver"}`:     1,
	} {
		e.eventually(series, m.atLeast(series, want))
	}
	// The first config the controller renders is a reload, counted
	// under its reason.
	e.eventually("a reload counted", func() error {
		if n := m.sum(t, "haproxy_k8s_sync_reloads_total"); n < 1 {
			return fmt.Errorf("reloads_total: %v", n)
		}
		return nil
	})
	if v := m.value(t, `haproxy_k8s_sync_last_success_timestamp_seconds{driver="apiserver"}`); v <= 0 {
		t.Errorf("last success timestamp %v", v)
	}
	if n := m.sum(t, "haproxy_k8s_sync_build_info"); n != 1 {
		t.Errorf("build_info: %v", n)
	}
	if promtool, err := exec.LookPath("promtool"); err == nil { // make deps installs it; TestMetricsCountWhatHappens requires it
		cmd := exec.Command(promtool, "check", "metrics")
		cmd.Stdin = bytes.NewReader(m.scrape(t))
		if out, err := cmd.CombinedOutput(); err != nil {
			t.Errorf("promtool check metrics: %v\n%s", err, out)
		}
	}

	// --stats-address: HAProxy's page lists the apiserver backend.
	e.eventually("HAProxy's stats page", func() error {
		body, code := fetch("http://"+statsAddr+"/stats;csv", "", "", false)
		if code != 200 || !strings.Contains(body, "\napiserver,") {
			return fmt.Errorf("stats page: %d\n%s", code, body)
		}
		return nil
	})
}
