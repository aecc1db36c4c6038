package nodes

import (
	"os"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/haproxy-k8s-sync/haproxy-k8s-sync/internal/testing/proc"
)

// pathEnv makes sure sbin directories are searched: kube-proxy runs nft,
// containerd runs runc and its shim, kubelet mount and friends.
func pathEnv() []string {
	env := os.Environ()
	for i, e := range env {
		if strings.HasPrefix(e, "PATH=") {
			env[i] = e + ":/usr/local/sbin:/usr/sbin:/sbin"
			return env
		}
	}
	return append(env, "PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin")
}

// startProc runs bin with args, logging to logPath (appended: a daemon
// restarted by a test keeps one log). The process gets a process group of
// its own: a Ctrl-C of the test does not reach it before the cleanup does.
func startProc(name, logPath, bin string, args ...string) (*proc.Process, error) {
	return proc.Start(name, logPath, bin, proc.Options{Env: pathEnv(), Append: true, OwnGroup: true}, args...)
}

// startIn runs bin inside the node's namespaces (network and mount, those
// of its holder process) through nsenter, which execs bin: the PID is
// bin's.
func (n *Node) startIn(name, bin string, args ...string) (*proc.Process, error) {
	a := append([]string{"--target", strconv.Itoa(n.holder.Pid()), "--mount", "--net", "--", bin}, args...)
	return startProc(name, n.logPath(name), "nsenter", a...)
}

// killPID sends SIGKILL to pid and waits until it is gone (or killWait).
func killPID(pid int) {
	_ = syscall.Kill(pid, syscall.SIGKILL)
	deadline := time.Now().Add(killWait)
	for time.Now().Before(deadline) {
		if _, err := os.Stat("/proc/" + strconv.Itoa(pid)); err != nil {
			return
		}
		time.Sleep(pollEvery) // poll interval, not synchronisation
	}
}

// waitFor polls cond until it returns nil, p exits (when p is not nil),
// or timeout passes.
func waitFor(timeout time.Duration, p *proc.Process, cond func() error) error {
	return proc.WaitFor(timeout, pollEvery, p, cond)
}
