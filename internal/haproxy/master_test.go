package haproxy

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/haproxy-k8s-sync/haproxy-k8s-sync/internal/haproxy/haproxytest"
)

func TestReload(t *testing.T) {
	l := startLB(t, "")
	ctx := testCtx(t)
	before, err := l.master.ShowProc(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if before.MasterPID != l.proc.MasterPID() || before.Reloads != 0 || before.Failed != 0 || len(before.Workers) != 1 {
		t.Fatalf("show proc before: %+v (master %d)", before, l.proc.MasterPID())
	}
	info1, err := l.rt.ShowInfo(ctx)
	if err != nil {
		t.Fatal(err)
	}
	v := l.version(t)
	for i := 1; i <= 3; i++ {
		start := time.Now()
		res, err := l.master.ReloadReport(ctx)
		if err != nil {
			t.Fatalf("reload %d: %v", i, err)
		}
		// 2.7+ answers the reload itself (Success=1 and the startup
		// logs); 2.6 is confirmed by polling show proc.
		if res.Version != before.Version || res.Version.Text != v.Text || res.Answered != v.SyncReload() || (len(res.Log) > 0) != v.SyncReload() {
			t.Fatalf("reload %d on %s: %+v", i, v, res)
		}
		after, err := l.master.ShowProc(ctx)
		if err != nil {
			t.Fatal(err)
		}
		t.Logf("reload %d in %s: %+v", i, time.Since(start), after)
		if after.Reloads != before.Reloads+i || after.Failed != 0 || after.MasterPID != before.MasterPID {
			t.Fatalf("after reload %d: %+v", i, after)
		}
	}
	after, _ := l.master.ShowProc(ctx)
	if slices.Equal(after.Workers, before.Workers) {
		t.Fatalf("workers unchanged: %v", after.Workers)
	}
	l.rt.Reset()
	info2, err := l.rt.ShowInfo(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if info2["Pid"] == info1["Pid"] || !slices.Contains(after.Workers, atoi(t, info2["Pid"])) {
		t.Fatalf("runtime talks to pid %s, workers %v", info2["Pid"], after.Workers)
	}
	// The persistent runtime connection kept the first worker alive as an
	// old worker; once Reset dropped it, that worker finishes.
	eventually(t, 5*time.Second, "old workers gone", func() error {
		p, err := l.master.ShowProc(ctx)
		if err == nil && len(p.OldWorkers) > 0 {
			err = fmt.Errorf("old workers %v", p.OldWorkers)
		}
		return err
	})
}

func TestReloadFailedKeepsServing(t *testing.T) {
	l := startLB(t, "")
	ctx := testCtx(t)
	port := greeter(t, "still here\n")
	l.useSlot(t, "s1", port)
	l.waitOpState(t, "s1", OpRunning)
	check := func() error {
		got, err := l.dialFrontend()
		if err == nil && got != "still here\n" {
			err = errors.New("unexpected answer " + got)
		}
		return err
	}
	eventually(t, 5*time.Second, "traffic before reload", check)

	if err := os.WriteFile(l.proc.ConfigPath, []byte(l.goodCfg+"\nthis is not haproxy\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	v := l.version(t)
	for i := 1; i <= 2; i++ {
		res, err := l.master.ReloadReport(ctx)
		if !errors.Is(err, ErrReloadFailed) {
			t.Fatalf("broken reload %d: %v, want ErrReloadFailed", i, err)
		}
		// 2.7+: the master's own answer says why, and the error carries
		// it; 2.6's master only counts the failure.
		const why = "unknown keyword 'this'"
		if v.SyncReload() {
			if !res.Answered || len(res.Alerts()) == 0 || !strings.Contains(res.Alerts()[0], why) || !strings.Contains(err.Error(), why) {
				t.Fatalf("failed reload %d on %s: %v, %+v; want the alert %q", i, v, err, res, why)
			}
		} else if res.Answered || res.Log != nil || !strings.Contains(err.Error(), "failed reload(s)") {
			t.Fatalf("failed reload %d on %s: %v, %+v", i, v, err, res)
		}
		p, _ := l.master.ShowProc(ctx)
		// The worker that still serves: 3.1+ masters list it among the
		// old workers once a reload began, failed or not.
		// Its failed count: 2.6 and 3.0 count the failed reloads in a
		// row, 3.2 says only that the last one failed (1).
		serving, failed := p.Workers, i
		if v.AtLeast(3, 1) {
			serving, failed = p.OldWorkers, 1
		}
		if p.Failed != failed || p.Reloads != i || len(serving) != 1 || len(p.Workers)+len(p.OldWorkers) != 1 {
			t.Fatalf("after failed reload %d on %s: %+v", i, v, p)
		}
		// The old worker still serves, runtime state included.
		if err := check(); err != nil {
			t.Fatalf("traffic after failed reload: %v", err)
		}
		if _, err := l.rt.ShowInfo(ctx); err != nil {
			t.Fatalf("runtime after failed reload: %v", err)
		}
	}

	if err := os.WriteFile(l.proc.ConfigPath, []byte(l.goodCfg), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := l.master.Reload(ctx); err != nil {
		t.Fatal(err)
	}
	if p, _ := l.master.ShowProc(ctx); p.Failed != 0 || p.Reloads != 3 {
		t.Fatalf("after good reload: %+v", p)
	}
}

func TestMasterUnavailable(t *testing.T) {
	m := NewMaster(filepath.Join(t.TempDir(), "none.sock"))
	ctx, cancel := context.WithTimeout(context.Background(), 100*time.Millisecond)
	defer cancel()
	start := time.Now()
	_, err := m.Command(ctx, "show proc")
	if !errors.Is(err, ErrUnavailable) || !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("err = %v", err)
	}
	if el := time.Since(start); el > 2*time.Second {
		t.Fatalf("took %s", el)
	}
}

func TestCheck(t *testing.T) {
	dir := t.TempDir()
	ctx := testCtx(t)
	good := filepath.Join(dir, "good.cfg")
	bad := filepath.Join(dir, "bad.cfg")
	_ = os.WriteFile(good, []byte(lbConfig(dir, 8080)), 0o600)
	_ = os.WriteFile(bad, []byte(lbConfig(dir, 8080)+"    server s5 127.0.0.1:1 bogus-keyword\n"), 0o600)
	bin := haproxytest.Bin()
	if err := Check(ctx, bin, good); err != nil {
		t.Fatalf("good config: %v", err)
	}
	err := Check(ctx, bin, bad)
	if !errors.Is(err, ErrInvalidConfig) || !strings.Contains(err.Error(), "bogus-keyword") {
		t.Fatalf("bad config: %v", err)
	}
	t.Logf("bad config: %v", err)
	if err := Check(ctx, filepath.Join(dir, "no-haproxy"), good); err == nil || errors.Is(err, ErrInvalidConfig) {
		t.Fatalf("missing binary: %v", err)
	}
}
