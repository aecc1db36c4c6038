package runtimeapi

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/haproxy-k8s-sync/haproxy-k8s-sync/internal/driver"
	"github.com/haproxy-k8s-sync/haproxy-k8s-sync/internal/haproxy"
	"github.com/haproxy-k8s-sync/haproxy-k8s-sync/internal/haproxy/haproxytest"
	"github.com/haproxy-k8s-sync/haproxy-k8s-sync/internal/model"
	"github.com/haproxy-k8s-sync/haproxy-k8s-sync/internal/render"
)

// A 3.1+ master refuses a reload while a new worker is still starting
// ("Another reload is still in progress"): the pass that wanted it is put
// off (driver.ErrDeferred with RetryAfter, the cause found by errors.Is),
// not failed, and the pass after the other reload finished reloads.
//
// The other reload is the test's own, sent to the master behind the
// driver's back while a marker file exists: a second configuration file
// loads a Lua script that then keeps the new worker starting for seconds
// (3.1+ workers parse the configuration themselves), once it has read
// haproxy.cfg, so that reload runs the configuration from before the
// pass.
func TestReloadRefusedWhileLoading(t *testing.T) {
	dir := t.TempDir()
	cfgPath := filepath.Join(dir, "haproxy.cfg")
	marker := filepath.Join(dir, "slow")
	started := filepath.Join(dir, "slow.started") // the Lua script ran: haproxy.cfg was read
	script := filepath.Join(dir, "slow.lua")
	extra := filepath.Join(dir, "slow.cfg")
	const slowFor = 1 // seconds (of CPU) a worker starting with the marker spends in its Lua
	files := map[string]string{
		cfgPath: haproxytest.MinimalConfig(dir),
		script: fmt.Sprintf("local f = io.open(%q, \"r\")\nif f then\n  f:close()\n  io.open(%q, \"w\"):close()\n"+
			"  local t = os.clock()\n  while os.clock() - t < %d do end\nend\n", marker, started, slowFor),
		extra: fmt.Sprintf("global\n    lua-load %s\n", script),
	}
	for path, text := range files {
		if err := os.WriteFile(path, []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	p := haproxytest.StartConfigs(t, dir, cfgPath, extra)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	master := haproxy.NewMaster(p.MasterSocket)
	proc, err := master.ShowProc(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if !proc.Version.AtLeast(3, 1) {
		t.Skipf("HAProxy %s reloads in the master, which refuses no reload (3.1+ only)", proc.Version)
	}
	d := NewHAProxy(Options{
		ConfigPath: cfgPath, Binary: haproxytest.Bin(), MasterSocket: p.MasterSocket, ReloadTimeout: time.Minute,
		Render:         render.Options{StatsSocket: p.StatsSocket, StateFile: filepath.Join(dir, "server-state")},
		staticBackends: true, // new backends are its reloads, on 3.4+ too
	})
	t.Cleanup(func() { _ = d.Close() })
	backends := func(n int) model.Config {
		var cfg model.Config
		for i := range n {
			cfg.Backends = append(cfg.Backends, &model.Backend{Name: fmt.Sprintf("be_%d", i), Balance: "roundrobin", Servers: verifyServers(i, 2)})
		}
		return cfg
	}
	if res, err := d.Apply(ctx, backends(1)); err != nil || !res.Reloaded {
		t.Fatalf("first apply: reloaded %v, %v", res.Reloaded, err)
	}

	// Someone else's reload, slow to load.
	if err := os.WriteFile(marker, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	other := make(chan error, 1)
	go func() { other <- haproxy.NewMaster(p.MasterSocket).Reload(ctx) }()
	waitFile(t, started)
	if err := os.Remove(marker); err != nil { // the reloads after it are fast
		t.Fatal(err)
	}

	res, err := d.Apply(ctx, backends(2))
	if !errors.Is(err, driver.ErrDeferred) || !errors.Is(err, haproxy.ErrReloadInProgress) || errors.Is(err, haproxy.ErrReloadFailed) {
		t.Fatalf("apply during another reload: %v; want ErrDeferred and ErrReloadInProgress", err)
	}
	if res.Reloaded || res.RetryAfter <= 0 {
		t.Fatalf("apply during another reload: reloaded %v, retry after %v", res.Reloaded, res.RetryAfter)
	}
	if o := driver.Outcome(res, err); !o.Later || o.After != res.RetryAfter {
		t.Fatalf("loop outcome %+v: want a turn put off, not a failure", o)
	}
	if err := <-other; err != nil {
		t.Fatalf("the other reload: %v", err)
	}

	// The pass the loop gives it again reloads.
	res, err = d.Apply(ctx, backends(2))
	if err != nil || !res.Reloaded {
		t.Fatalf("apply after the other reload: reloaded %v, %v", res.Reloaded, err)
	}
	rt := haproxy.NewRuntime(p.StatsSocket)
	defer rt.Close()
	states, err := rt.ShowServersState(ctx)
	if err != nil {
		t.Fatal(err)
	}
	seen := map[string]bool{}
	for _, s := range states {
		seen[s.Backend] = true
	}
	if !seen["be_0"] || !seen["be_1"] {
		t.Fatalf("HAProxy runs backends %v; want be_0 and be_1", seen)
	}
}

// waitFile waits until path exists.
func waitFile(t *testing.T, path string) {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for time.Now().Before(deadline) {
		if _, err := os.Stat(path); err == nil {
			return
		}
		time.Sleep(10 * time.Millisecond)
	}
	t.Fatalf("%s did not appear within 30s", path)
}
