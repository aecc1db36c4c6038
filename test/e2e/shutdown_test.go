package e2e

import (
	"errors"
	"os/exec"
	"syscall"
	"testing"
	"time"

	"github.com/haproxy-k8s-sync/haproxy-k8s-sync/internal/haproxy/haproxytest"
	"github.com/haproxy-k8s-sync/haproxy-k8s-sync/internal/testing/lab"
	"github.com/haproxy-k8s-sync/haproxy-k8s-sync/internal/testing/shutdown"
)

// controllerBinary is the controller as t runs it: this test binary as
// cmd/haproxy-k8s-sync's main (cli.Main), with no build of its own.
func controllerBinary(t *testing.T) string {
	t.Helper()
	return shutdown.Self(t, "controller") // main_test.go
}

// startBinary runs bin with args in a process group of its own; done
// gets its exit. At the end of t the group is killed and, if t failed,
// its output logged as what's log.
func startBinary(t *testing.T, what, bin string, args ...string) (cmd *exec.Cmd, done <-chan error) {
	t.Helper()
	log := &haproxytest.LockedBuffer{}
	cmd = exec.Command(bin, args...)
	cmd.Stdout, cmd.Stderr = log, log
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	exited := make(chan error, 1)
	go func() { exited <- cmd.Wait() }()
	t.Cleanup(func() {
		_ = syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
		if t.Failed() {
			t.Logf("%s log:\n%s", what, log.String())
		}
	})
	return cmd, exited
}

// `run` stops within a few seconds on SIGTERM and on SIGINT, exits 0,
// leaves no process of its own behind, and leaves HAProxy serving as it is.
func TestRunStopsPromptlyOnSignals(t *testing.T) {
	bin := controllerBinary(t)
	for _, sig := range []syscall.Signal{syscall.SIGTERM, syscall.SIGINT} {
		t.Run(sig.String(), func(t *testing.T) {
			e := newEnv(t)
			np := e.threeNodes()
			port := int32(haproxytest.FreePort(t))
			e.createService(lab.Service{Namespace: ns, Name: "web", Port: port, NodePort: np})
			cmd, done := startBinary(t, "controller", bin, append([]string{"run"}, e.controllerArgs()...)...)
			e.eventually("web serves", serves(port, "n1", "n2", "n3"))
			master := e.hap.MasterPID()
			reloads := e.reloads()

			start := time.Now()
			if err := cmd.Process.Signal(sig); err != nil {
				t.Fatal(err)
			}
			select {
			case err := <-done:
				if err != nil {
					t.Errorf("exit after %v: %v", sig, err)
				}
				t.Logf("stopped %v after the signal", time.Since(start).Round(time.Millisecond))
			case <-time.After(5 * time.Second):
				t.Fatalf("still running 5s after %v", sig)
			}
			// Nothing of the controller's process group survives.
			if err := syscall.Kill(-cmd.Process.Pid, 0); !errors.Is(err, syscall.ESRCH) {
				t.Errorf("a process of the controller's group survived (kill -0: %v)", err)
			}
			// HAProxy goes on serving as it was: same master, no reload.
			if err := serves(port, "n1", "n2", "n3")(); err != nil {
				t.Errorf("HAProxy after the controller stopped: %v", err)
			}
			if got := e.hap.MasterPID(); got != master {
				t.Errorf("HAProxy master %d, was %d", got, master)
			}
			if got := e.reloads(); got != reloads {
				t.Errorf("reloads %d, was %d: stopping reloaded HAProxy", got, reloads)
			}
		})
	}
}
