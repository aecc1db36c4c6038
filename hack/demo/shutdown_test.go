package main

import (
	"context"
	"os/exec"
	"regexp"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/haproxy-k8s-sync/haproxy-k8s-sync/internal/haproxy/haproxytest"
	"github.com/haproxy-k8s-sync/haproxy-k8s-sync/internal/testing/shutdown"
)

// The demo, left running (-wait), stops within seconds on SIGINT (Ctrl-C),
// exits 0, and leaves no process behind (kube-apiserver, etcd, HAProxy).
func TestDemoStopsPromptlyOnSIGINT(t *testing.T) {
	if testing.Short() {
		t.Skip("starts the whole demo")
	}
	shutdown.Check(t, shutdown.Program{
		Name:      "demo",
		Args:      []string{"-wait", "-haproxy-bin", haproxytest.Bin()},
		Ready:     func(out string) bool { return strings.Contains(out, "Ctrl-C to stop") },
		Waiting:   "its end",
		WorkDirIn: regexp.MustCompile(`files in (\S+)\)`),
		Signal:    syscall.SIGINT,
		ExitZero:  true,
	})
}

// The demo run to its end stops the controller before HAProxy, so that
// nothing warns after "demo finished: OK" (the controller's last write of
// the server state needs HAProxy), and names no file it is about to remove.
func TestDemoEndsCleanly(t *testing.T) {
	if testing.Short() {
		t.Skip("starts the whole demo")
	}
	bin := shutdown.Self(t, "main")
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	out, err := exec.CommandContext(ctx, bin, "-haproxy-bin", haproxytest.Bin()).CombinedOutput()
	if err != nil || !strings.Contains(string(out), "demo finished: OK") {
		t.Fatalf("demo: %v\n%s", err, out)
	}
	for _, bad := range []string{"could not persist", "level=WARN", "level=ERROR", "the config HAProxy runs:"} {
		if strings.Contains(string(out), bad) {
			t.Errorf("the output has %q:\n%s", bad, out)
		}
	}
}
