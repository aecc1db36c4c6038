// Package shutdown checks that a program of hack/ (the benchmark, the
// demo) stops promptly on a signal and leaves none of the processes it
// started (controller, HAProxy, kube-apiserver, etcd...) behind.
package shutdown

import (
	"os/exec"
	"regexp"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/haproxy-k8s-sync/haproxy-k8s-sync/internal/haproxy/haproxytest"
	"github.com/haproxy-k8s-sync/haproxy-k8s-sync/internal/testing/lab"
)

// Program is the main package in the test's directory, run with Args.
type Program struct {
	Name string   // in messages: "benchmark", "demo"
	Args []string // its arguments
	Dir  string   // its working directory; "" is the test's

	// Ready tells from its output when to signal it; Waiting says what
	// it waits for, in messages ("its baseline churn").
	Ready   func(out string) bool
	Waiting string

	// WorkDir is the directory every command line it starts names; when
	// it is only known from its output, WorkDirIn's first group finds it
	// there once Ready.
	WorkDir   string
	WorkDirIn *regexp.Regexp

	Signal   syscall.Signal
	ExitZero bool // it must exit 0 after Signal
}

// Check starts p (the test binary as its package's program, "main":
// Main, Self), signals it once Ready, and fails t unless it ended within
// 15 s leaving no process that names its work directory.
func Check(t *testing.T, p Program) {
	t.Helper()
	cmd := exec.Command(Self(t, "main"), p.Args...)
	cmd.Dir = p.Dir
	out := &haproxytest.LockedBuffer{}
	cmd.Stdout, cmd.Stderr = out, out
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	work := p.WorkDir
	t.Cleanup(func() {
		_ = cmd.Process.Kill()
		if work != "" {
			lab.KillProcessesNaming(work)
		}
		if t.Failed() {
			t.Logf("%s output:\n%s", p.Name, out.String())
		}
	})

	deadline := time.Now().Add(3 * time.Minute)
	for !p.Ready(out.String()) {
		select {
		case err := <-done:
			t.Fatalf("the %s ended before %s: %v", p.Name, p.Waiting, err)
		default:
		}
		if time.Now().After(deadline) {
			t.Fatalf("the %s did not get to %s within 3 minutes", p.Name, p.Waiting)
		}
		time.Sleep(100 * time.Millisecond) // poll interval
	}
	if p.WorkDirIn != nil {
		m := p.WorkDirIn.FindStringSubmatch(out.String())
		if m == nil {
			t.Fatalf("no work directory in the %s's output", p.Name)
		}
		work = m[1]
	}
	if len(lab.ProcessesNaming(work)) == 0 {
		t.Fatalf("no process of the %s found under %s: the check below would prove nothing", p.Name, work)
	}
	start := time.Now()
	if err := cmd.Process.Signal(p.Signal); err != nil {
		t.Fatal(err)
	}
	select {
	case err := <-done:
		if err != nil && p.ExitZero {
			t.Errorf("exit after %v: %v", p.Signal, err)
		}
		t.Logf("stopped %v after %v", time.Since(start).Round(time.Millisecond), p.Signal)
	case <-time.After(15 * time.Second):
		t.Fatalf("still running 15s after %v", p.Signal)
	}
	if left := lab.ProcessesNaming(work); len(left) > 0 {
		t.Errorf("processes of the %s survived it: %s", p.Name, strings.Join(left, "; "))
	}
}
