package lab

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"syscall"
	"time"

	"github.com/haproxy-k8s-sync/haproxy-k8s-sync/internal/haproxy"
)

// HAProxy is a master-worker HAProxy started by a program (the demo, the
// benchmark); tests use haproxytest instead.
type HAProxy struct {
	ConfigPath, MasterSocket, StatsSocket string
	cmd                                   *exec.Cmd
}

// StartHAProxy runs `haproxy -W -S <dir>/master.sock -f cfgPath` in its own
// process group and waits until the worker's stats socket (which the config
// must declare at statsSocket) answers.
func StartHAProxy(bin, dir, cfgPath, statsSocket string) (*HAProxy, error) {
	h := &HAProxy{ConfigPath: cfgPath, MasterSocket: filepath.Join(dir, "master.sock"), StatsSocket: statsSocket}
	log, err := os.Create(filepath.Join(dir, "haproxy.log"))
	if err != nil {
		return nil, err
	}
	defer log.Close()
	h.cmd = exec.Command(bin, "-W", "-S", h.MasterSocket, "-f", cfgPath)
	h.cmd.Stdout, h.cmd.Stderr = log, log
	h.cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL} // never outlives its starter
	if err := h.cmd.Start(); err != nil {
		return nil, err
	}
	rt := haproxy.NewRuntime(statsSocket)
	defer rt.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 15*time.Second)
	defer cancel()
	for ctx.Err() == nil {
		if _, err := rt.ShowInfo(ctx); err == nil {
			return h, nil
		}
		time.Sleep(20 * time.Millisecond) // poll interval
	}
	h.Stop()
	return nil, fmt.Errorf("haproxy did not come up; see %s", log.Name())
}

// MasterPID is the PID of the master process.
func (h *HAProxy) MasterPID() int { return h.cmd.Process.Pid }

// Stop kills the master and its workers.
func (h *HAProxy) Stop() {
	if h.cmd.Process != nil {
		_ = syscall.Kill(-h.cmd.Process.Pid, syscall.SIGKILL)
		_ = h.cmd.Wait()
	}
}
