package e2e

import (
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/haproxy-k8s-sync/haproxy-k8s-sync/internal/dataplane/dataplanetest"
	"github.com/haproxy-k8s-sync/haproxy-k8s-sync/internal/haproxy/haproxytest"
	"github.com/haproxy-k8s-sync/haproxy-k8s-sync/internal/testing/lab"
)

// TestUpgradeFromOlderBinary measures an upgrade of the controller while
// HAProxy keeps running (a rolling update of its Deployment or DaemonSet):
// the binary named by HKS_UPGRADE_FROM (an older release, built by hand:
// `git worktree add /tmp/old <commit> && cd /tmp/old && go build -o
// /tmp/hks-old ./cmd/haproxy-k8s-sync`) runs a world (five Cluster
// Services on three nodes) until it has synced, a node joins (its
// servers take slots bound to no node, no reload), the old controller
// stops, and this tree's controller starts on the same HAProxy,
// haproxy.cfg and state files (local), or on the same Data Plane API (the
// test server standing in for it: dataplane). It logs the reloads of the
// window of two resync periods after the start and, for the local
// HAProxy, the failed connections through it from the stop on; with
// HKS_UPGRADE_WANT_RELOADS=N it fails on another count. Skipped without
// HKS_UPGRADE_FROM: CI has no older binary; the render package's
// TestOlderReleases and runtimeapi's TestUpgradeKeepsOlderRendering hold
// the behaviour there (docs/reliability.md, "Upgrading the controller").
func TestUpgradeFromOlderBinary(t *testing.T) {
	old := os.Getenv("HKS_UPGRADE_FROM")
	if old == "" {
		t.Skip("HKS_UPGRADE_FROM names no older controller binary")
	}
	for _, driver := range []string{"local", "dataplane"} {
		t.Run(driver, func(t *testing.T) { upgradeFrom(t, old, driver) })
	}
}

func upgradeFrom(t *testing.T, old, driver string) {
	e := newEnv(t)
	const services = 5
	var nps []int32
	for len(nps) < services {
		if np := nodePort(); !slices.Contains(nps, np) {
			nps = append(nps, np)
		}
	}
	for i, n := range []string{"n1", "n2", "n3"} {
		e.addNode(n, i+1, true, nps...)
	}
	var ports []int32
	for i := range services {
		port := int32(haproxytest.FreePort(t))
		ports = append(ports, port)
		name := fmt.Sprint("web-", i)
		e.createService(lab.Service{Namespace: ns, Name: name, Port: port, NodePort: nps[i]})
		e.setEndpoints(name, pod(1+2*i, "n1"), pod(2+2*i, "n2"))
	}
	var api *dataplanetest.Server
	var extra []string
	reloads := e.reloads
	// servedBy: every Service served by the nodes named.
	servedBy := func(nodes ...string) func() error {
		return func() error {
			for _, p := range ports {
				if err := serves(p, nodes...)(); err != nil {
					return err
				}
			}
			return nil
		}
	}
	if driver == "dataplane" {
		api = dataplanetest.Start(t, dataplanetest.Options{Users: map[string]string{"admin": "pw-upgrade"}})
		pw := filepath.Join(t.TempDir(), "password")
		if err := os.WriteFile(pw, []byte("pw-upgrade\n"), 0o600); err != nil {
			t.Fatal(err)
		}
		extra = []string{"--instance", "name=dp,dataplane-url=" + api.URL + ",username=admin,password-file=" + pw}
		reloads = api.Reloads
		servedBy = func(nodes ...string) func() error {
			return func() error {
				for i, p := range ports {
					want := map[string]bool{}
					for _, n := range nodes {
						want[fmt.Sprintf("127.%d.0.%s:%d", e.subnet, n[1:], nps[i])] = true
					}
					if err := servingIs(api, fmt.Sprintf("be_default_web-%d_%d", i, p), want); err != nil {
						return fmt.Errorf("web-%d: %w", i, err)
					}
				}
				return nil
			}
		}
	}

	// The older release, until it serves every node.
	t.Cleanup(func() {
		if t.Failed() {
			t.Logf("HAProxy:\n%s", e.hap.Output())
		}
	})
	cmd, done := startBinary(t, "older controller", old, append([]string{"run"}, e.controllerArgs(extra...)...)...)
	e.eventually("the older release serves", servedBy("n1", "n2", "n3"))
	// A node joins after the older release's last reload: its servers
	// take slots bound to no node.
	e.addNode("n4", 4, true, nps...)
	e.eventually("n4 served", servedBy("n1", "n2", "n3", "n4"))
	if driver == "local" {
		e.eventually("the older release persisted n4", func() error { return contains(e.config(), fmt.Sprintf("127.%d.0.4:%d", e.subnet, nps[0])) })
	}
	oldCfg := e.config()
	if err := cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	select {
	case err := <-done:
		if err != nil {
			t.Fatalf("older controller: %v", err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("older controller still running 10s after SIGTERM")
	}
	before := reloads()

	// This tree's controller on the same HAProxy, files or API, under load.
	stop := make(chan struct{})
	loaded := make(chan loadResult)
	go func() {
		tot, f, err := load(ports[0], 0, 50000, stop)
		loaded <- loadResult{tot, f, err}
	}()
	start := time.Now()
	e.startController(extra...)
	// The window: two resync periods (3 s each) of passes and background
	// writes after the start. A measurement, not a synchronisation.
	time.Sleep(time.Until(start.Add(7 * time.Second)))
	close(stop)
	lr := <-loaded
	if err := servedBy("n1", "n2", "n3", "n4")(); err != nil {
		t.Errorf("after the upgrade: %v", err)
	}
	n := reloads() - before
	if newCfg := e.config(); newCfg != oldCfg {
		oldLines, n := strings.Split(oldCfg, "\n"), 0
		for _, l := range strings.Split(newCfg, "\n") {
			if !slices.Contains(oldLines, l) {
				if n++; n <= 3 {
					t.Logf("haproxy.cfg now has %q", l)
				}
			}
		}
		t.Logf("haproxy.cfg: %d lines the older release did not write", n)
	}
	if driver == "local" {
		t.Logf("upgrade from %s, local HAProxy: %d reloads; %d of %d connections through it failed (first: %v); haproxy.cfg rewritten: %v",
			old, n, lr.failed, lr.total, lr.err, e.config() != oldCfg)
	} else {
		t.Logf("upgrade from %s, Data Plane API (test server): %d reloads", old, n)
	}
	for _, l := range strings.Split(e.ctlLog.String(), "\n") {
		if strings.Contains(l, "reloaded=true") || strings.Contains(l, "older release") {
			t.Log(l)
		}
	}
	if want := os.Getenv("HKS_UPGRADE_WANT_RELOADS"); want != "" && want != fmt.Sprint(n) {
		t.Errorf("%d reloads on the upgrade, want %s", n, want)
	}
	if driver == "local" && lr.failed != 0 {
		t.Errorf("%d of %d connections failed", lr.failed, lr.total)
	}
}
