package main

import (
	"regexp"
	"strings"
	"syscall"
	"testing"

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
