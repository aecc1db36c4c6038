package main

import (
	"bytes"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/haproxy-k8s-sync/haproxy-k8s-sync/internal/haproxy/haproxytest"
	"github.com/haproxy-k8s-sync/haproxy-k8s-sync/internal/testing/lab"
)

// The demo, left running (-wait), stops within seconds on SIGINT (Ctrl-C),
// exits 0, and leaves no process behind (kube-apiserver, etcd, HAProxy).
func TestDemoStopsPromptlyOnSIGINT(t *testing.T) {
	if testing.Short() {
		t.Skip("starts the whole demo")
	}
	bin := filepath.Join(t.TempDir(), "demo")
	if out, err := exec.Command("go", "build", "-o", bin, ".").CombinedOutput(); err != nil {
		t.Fatalf("go build: %v\n%s", err, out)
	}
	cmd := exec.Command(bin, "-wait", "-haproxy-bin", haproxytest.Bin())
	out := &lockedBuffer{}
	cmd.Stdout, cmd.Stderr = out, out
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	var work string
	t.Cleanup(func() {
		_ = cmd.Process.Kill()
		if work != "" {
			lab.KillProcessesNaming(work)
		}
		if t.Failed() {
			t.Logf("demo output:\n%s", out.String())
		}
	})
	deadline := time.Now().Add(3 * time.Minute)
	for !strings.Contains(out.String(), "Ctrl-C to stop") {
		select {
		case err := <-done:
			t.Fatalf("the demo ended: %v", err)
		default:
		}
		if time.Now().After(deadline) {
			t.Fatal("the demo did not get to its end within 3 minutes")
		}
		time.Sleep(100 * time.Millisecond) // poll interval
	}
	m := regexp.MustCompile(`files in (\S+)\)`).FindStringSubmatch(out.String())
	if m == nil {
		t.Fatal("no work directory in the demo's output")
	}
	work = m[1]
	if len(lab.ProcessesNaming(work)) == 0 {
		t.Fatalf("no process of the demo found under %s: the check below would prove nothing", work)
	}
	start := time.Now()
	if err := cmd.Process.Signal(syscall.SIGINT); err != nil {
		t.Fatal(err)
	}
	select {
	case err := <-done:
		if err != nil {
			t.Errorf("exit after SIGINT: %v", err)
		}
		t.Logf("stopped %v after SIGINT", time.Since(start).Round(time.Millisecond))
	case <-time.After(15 * time.Second):
		t.Fatal("still running 15s after SIGINT")
	}
	if left := lab.ProcessesNaming(work); len(left) > 0 {
		t.Errorf("processes of the demo survived it: %s", strings.Join(left, "; "))
	}
}

type lockedBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (l *lockedBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *lockedBuffer) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}
