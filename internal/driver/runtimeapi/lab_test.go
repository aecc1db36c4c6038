package runtimeapi

import (
	"context"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/haproxy-k8s-sync/haproxy-k8s-sync/internal/haproxy"
	"github.com/haproxy-k8s-sync/haproxy-k8s-sync/internal/haproxy/haproxytest"
	"github.com/haproxy-k8s-sync/haproxy-k8s-sync/internal/render"
)

// testLab is a real master-worker HAProxy, started from a minimal config, and
// a hybrid driver for it with a server-state file.
type testLab struct {
	p         *haproxytest.Process
	d         *HAProxy
	cfgPath   string
	statePath string
}

func startLab(t testing.TB) *testLab {
	t.Helper()
	return startLabWith(t, func(*Options) {})
}

// startLabWith is startLab with the driver's options changed by opt.
func startLabWith(t testing.TB, opt func(*Options)) *testLab {
	t.Helper()
	dir := t.TempDir()
	l := &testLab{cfgPath: filepath.Join(dir, "haproxy.cfg"), statePath: filepath.Join(dir, "server-state")}
	if err := os.WriteFile(l.cfgPath, []byte(haproxytest.MinimalConfig(dir)), 0o644); err != nil {
		t.Fatal(err)
	}
	l.p = haproxytest.Start(t, dir, l.cfgPath)
	l.d = NewHAProxy(l.options(opt))
	t.Cleanup(func() { _ = l.d.Close() })
	return l
}

// reloads is the master's reload counter ("show proc"), failed ones
// included.
func (l *testLab) reloads(ctx context.Context, t testing.TB) int {
	t.Helper()
	p, err := haproxy.NewMaster(l.p.MasterSocket).ShowProc(ctx)
	if err != nil {
		t.Fatal(err)
	}
	return p.Reloads
}

// options are the lab driver's options, changed by opt.
func (l *testLab) options(opt func(*Options)) Options {
	o := Options{
		ConfigPath: l.cfgPath, Binary: haproxytest.Bin(), MasterSocket: l.p.MasterSocket, ReloadTimeout: time.Minute,
		Render: render.Options{StatsSocket: l.p.StatsSocket, StateFile: l.statePath},
		// A new backend is a reload (or a spare) on every version: the
		// tests of those paths hold on 3.4+ too; dynamic_test.go's turn
		// backends created at runtime on.
		staticBackends: true,
	}
	opt(&o)
	return o
}
