package haproxytest

import (
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
)

func TestStartKillRestart(t *testing.T) {
	dir := t.TempDir()
	cfg := filepath.Join(dir, "haproxy.cfg")
	if err := os.WriteFile(cfg, []byte(MinimalConfig(dir)), 0o600); err != nil {
		t.Fatal(err)
	}
	p := Start(t, dir, cfg)
	pid := p.MasterPID()
	if pid <= 0 || p.StatsSocket != StatsSocketPath(dir) || p.MasterSocket != MasterSocketPath(dir) {
		t.Fatalf("process %+v", p)
	}
	procs, err := oneShot(p.MasterSocket, "show proc")
	if err != nil || !strings.Contains(procs, "master") {
		t.Fatalf("show proc: %q %v", procs, err)
	}
	p.Restart(t)
	if p.MasterPID() == pid {
		t.Fatal("same master pid after restart")
	}
	if err := p.ready(); err != nil {
		t.Fatal(err)
	}
	pgid := p.MasterPID()
	p.Kill(t)
	if alive := liveInGroup(pgid); len(alive) != 0 {
		t.Fatalf("still alive: %v", alive)
	}
	if err := syscall.Kill(pid, 0); err == nil && len(liveInGroup(pid)) != 0 {
		t.Fatal("first master still alive")
	}
	p.Kill(t) // idempotent
}
