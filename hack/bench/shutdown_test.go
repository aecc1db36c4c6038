package main

import (
	"bytes"
	"fmt"
	"math/rand/v2"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/haproxy-k8s-sync/haproxy-k8s-sync/internal/testing/lab"
)

// The benchmark stops within seconds on SIGTERM while its baseline
// (--apply=reload) is under way, and no process it started survives it:
// controller, HAProxy, load generator, kube-apiserver, etcd.
func TestBenchStopsPromptlyDuringTheBaseline(t *testing.T) {
	if testing.Short() {
		t.Skip("starts the whole benchmark")
	}
	dir := t.TempDir()
	bin := filepath.Join(dir, "bench")
	if out, err := exec.Command("go", "build", "-o", bin, ".").CombinedOutput(); err != nil {
		t.Fatalf("go build: %v\n%s", err, out)
	}
	work := filepath.Join(dir, "work")
	// A free range of its own: 127.<subnet>.0.x nodes, ports unlikely taken.
	base := 21000 + rand.IntN(40)*200 // below the ephemeral ports others take
	cmd := exec.Command(bin, "-services", "10", "-endpoints", "2", "-nodes", "3", "-probe", "1", "-load-rate", "20",
		"-changes", "6", "-baseline-changes", "100000", "-health-checks", "false",
		"-frontend-base", fmt.Sprint(base), "-nodeport-base", "30000", "-subnet", fmt.Sprint(200+rand.IntN(50)),
		"-dir", work, "-keep")
	cmd.Dir = "../.." // it builds ./cmd/haproxy-k8s-sync, as `make bench` does
	out := &lockedBuffer{}
	cmd.Stdout, cmd.Stderr = out, out
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	t.Cleanup(func() {
		_ = cmd.Process.Kill()
		lab.KillProcessesNaming(work)
		if t.Failed() {
			t.Logf("benchmark output:\n%s", out.String())
		}
	})

	// The second "initial sync:" line is the baseline's.
	deadline := time.Now().Add(3 * time.Minute)
	for strings.Count(out.String(), "initial sync: every server") < 2 {
		select {
		case err := <-done:
			t.Fatalf("the benchmark ended before its baseline churn: %v", err)
		default:
		}
		if time.Now().After(deadline) {
			t.Fatal("the baseline did not start within 3 minutes")
		}
		time.Sleep(100 * time.Millisecond) // poll interval
	}
	if len(lab.ProcessesNaming(work)) == 0 {
		t.Fatalf("no process of the benchmark found under %s: the check below would prove nothing", work)
	}
	start := time.Now()
	if err := cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	select {
	case <-done:
		t.Logf("stopped %v after SIGTERM", time.Since(start).Round(time.Millisecond))
	case <-time.After(15 * time.Second):
		t.Fatal("still running 15s after SIGTERM")
	}
	if left := lab.ProcessesNaming(work); len(left) > 0 {
		t.Errorf("processes of the benchmark survived it: %s", strings.Join(left, "; "))
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
