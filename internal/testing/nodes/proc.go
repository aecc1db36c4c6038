package nodes

import (
	"bufio"
	"fmt"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"syscall"
	"time"
)

// proc is a child process whose output goes to a log file.
type proc struct {
	name    string
	cmd     *exec.Cmd
	logPath string
	done    chan struct{} // closed when the process has exited
	err     error         // exit status, valid after done
}

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

// startProc runs bin with args, logging to logPath. The process gets a
// process group of its own: a Ctrl-C of the test does not reach it before
// the cleanup does.
func startProc(name, logPath, bin string, args ...string) (*proc, error) {
	logf, err := os.OpenFile(logPath, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o600)
	if err != nil {
		return nil, err
	}
	cmd := exec.Command(bin, args...)
	cmd.Stdout, cmd.Stderr = logf, logf
	cmd.Env = pathEnv()
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
	if err := cmd.Start(); err != nil {
		logf.Close()
		return nil, fmt.Errorf("start %s: %w", name, err)
	}
	p := &proc{name: name, cmd: cmd, logPath: logPath, done: make(chan struct{})}
	go func() {
		p.err = cmd.Wait()
		logf.Close()
		close(p.done)
	}()
	return p, nil
}

// startIn runs bin inside the node's namespaces (network and mount, those
// of its holder process) through nsenter, which execs bin: the PID is
// bin's.
func (n *Node) startIn(name, bin string, args ...string) (*proc, error) {
	a := append([]string{"--target", strconv.Itoa(n.holder.cmd.Process.Pid), "--mount", "--net", "--", bin}, args...)
	return startProc(name, n.logPath(name), "nsenter", a...)
}

func (p *proc) exited() bool {
	if p == nil {
		return true
	}
	select {
	case <-p.done:
		return true
	default:
		return false
	}
}

// stop sends SIGTERM and waits up to grace, then kills. Safe on nil and on
// an exited process.
func (p *proc) stop(grace time.Duration) {
	if p.exited() {
		return
	}
	_ = p.cmd.Process.Signal(syscall.SIGTERM)
	t := time.NewTimer(grace)
	defer t.Stop()
	select {
	case <-p.done:
	case <-t.C:
		p.kill()
	}
}

// kill ends the process at once and waits for it (bounded: a process in
// uninterruptible sleep is reported, not waited for forever).
func (p *proc) kill() {
	if p.exited() {
		return
	}
	_ = p.cmd.Process.Kill()
	select {
	case <-p.done:
	case <-time.After(killWait):
	}
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

// tailFile returns the last n lines of a file, or a note why it cannot.
func tailFile(path string, n int) string {
	f, err := os.Open(path)
	if err != nil {
		return fmt.Sprintf("(%v)\n", err)
	}
	defer f.Close()
	ring := make([]string, 0, n)
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 64<<10), 1<<20)
	for sc.Scan() {
		if len(ring) == n {
			ring = ring[1:]
		}
		ring = append(ring, sc.Text())
	}
	if len(ring) == 0 {
		return "(empty)\n"
	}
	return strings.Join(ring, "\n") + "\n"
}

// waitFor polls cond every pollEvery until it returns nil, p exits (when
// p is not nil), or timeout passes.
func waitFor(timeout time.Duration, p *proc, cond func() error) error {
	deadline := time.Now().Add(timeout)
	for {
		err := cond()
		if err == nil {
			return nil
		}
		if p != nil && p.exited() {
			return fmt.Errorf("%s exited (%v) while waiting: %w\n--- last lines of %s ---\n%s", p.name, p.err, err, p.logPath, tailFile(p.logPath, 40))
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("not within %v: %w", timeout, err)
		}
		time.Sleep(pollEvery) // poll interval, not synchronisation
	}
}
