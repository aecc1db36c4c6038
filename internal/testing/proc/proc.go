// Package proc runs the test tiers' child processes (etcd, kube-apiserver,
// containerd, kubelet, ...): each with its output in a log file, stopped
// gracefully or killed with bounded waits, and waited on with a deadline
// that reports the end of its log when it dies first.
//
// The tiers' programs are Go programs, each run with GOMAXPROCS=1 unless
// the environment sets GOMAXPROCS: make test runs dozens of them at once
// on two cores, and each Go runtime's second processor only spun looking
// for work there (an e2e group's apiserver and etcd took ~15% less CPU
// with one, in the same time; docs/testing.md).
package proc

import (
	"bufio"
	"fmt"
	"io"
	"os"
	"os/exec"
	"strings"
	"syscall"
	"time"
)

// KillWait bounds how long Kill waits for the process to be reaped: a
// process in uninterruptible sleep is reported, not waited for forever.
const KillWait = 10 * time.Second

// Process is a child process whose output goes to a log file.
type Process struct {
	Name    string
	LogPath string
	Cmd     *exec.Cmd
	done    chan struct{} // closed when the process has exited
	err     error         // exit status, valid after done
}

// Options are how Start runs a process.
type Options struct {
	Env      []string // nil: the test's own environment; GOMAXPROCS=1 added to either (tierEnv)
	Append   bool     // append to the log (a restarted daemon) instead of truncating it
	OwnGroup bool     // a process group of its own: a Ctrl-C of the test reaches the cleanup first
}

// Start runs bin with args, its output in logPath. The process is killed
// when the test process dies (Linux).
func Start(name, logPath, bin string, o Options, args ...string) (*Process, error) {
	flags := os.O_CREATE | os.O_WRONLY | os.O_TRUNC
	if o.Append {
		flags = os.O_CREATE | os.O_WRONLY | os.O_APPEND
	}
	logf, err := os.OpenFile(logPath, flags, 0o600)
	if err != nil {
		return nil, err
	}
	cmd := exec.Command(bin, args...)
	cmd.Stdout, cmd.Stderr = logf, logf
	cmd.Env = tierEnv(o.Env)
	cmd.SysProcAttr = sysProcAttr(o.OwnGroup)
	if err := cmd.Start(); err != nil {
		logf.Close()
		return nil, fmt.Errorf("start %s: %w", name, err)
	}
	p := &Process{Name: name, LogPath: logPath, Cmd: cmd, done: make(chan struct{})}
	go func() {
		p.err = cmd.Wait()
		logf.Close()
		close(p.done)
	}()
	return p, nil
}

// tierEnv is env (nil: the process's own environment) with GOMAXPROCS=1
// added when it sets no GOMAXPROCS: a tier's program computes little at a
// time, and more processors than one only spin on the shared cores.
func tierEnv(env []string) []string {
	if env == nil {
		env = os.Environ()
	}
	for _, e := range env {
		if strings.HasPrefix(e, "GOMAXPROCS=") {
			return env
		}
	}
	return append(env[:len(env):len(env)], "GOMAXPROCS=1")
}

// Done is closed when the process has exited.
func (p *Process) Done() <-chan struct{} { return p.done }

// Err is the exit status; valid once Done is closed.
func (p *Process) Err() error { return p.err }

// Pid is the process's ID.
func (p *Process) Pid() int { return p.Cmd.Process.Pid }

// Exited tells whether the process has ended. A nil Process has.
func (p *Process) Exited() bool {
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

// Stop sends SIGTERM, waits up to grace, then kills. Safe on nil and on
// an exited process.
func (p *Process) Stop(grace time.Duration) {
	if p.Exited() {
		return
	}
	_ = p.Cmd.Process.Signal(syscall.SIGTERM)
	t := time.NewTimer(grace)
	defer t.Stop()
	select {
	case <-p.done:
	case <-t.C:
		p.Kill()
	}
}

// Kill ends the process at once and waits for it, up to KillWait. Safe on
// nil and on an exited process.
func (p *Process) Kill() {
	if p.Exited() {
		return
	}
	_ = p.Cmd.Process.Kill()
	t := time.NewTimer(KillWait)
	defer t.Stop()
	select {
	case <-p.done:
	case <-t.C:
	}
}

// Tail is the last n lines of the process's log.
func (p *Process) Tail(n int) string { return Tail(p.LogPath, n) }

// Died describes err together with the process's exit and the end of its
// log, for a wait the process did not live through.
func (p *Process) Died(err error) error {
	return fmt.Errorf("%s exited (%v) while waiting: %w\n--- last lines of %s ---\n%s", p.Name, p.err, err, p.LogPath, p.Tail(40))
}

// WaitFor polls cond every `every` until it returns nil, p exits (when p
// is not nil), or timeout passes.
func WaitFor(timeout, every time.Duration, p *Process, cond func() error) error {
	deadline := time.Now().Add(timeout)
	for {
		err := cond()
		if err == nil {
			return nil
		}
		if p != nil && p.Exited() {
			return p.Died(err)
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("not within %v: %w", timeout, err)
		}
		time.Sleep(every) // poll interval, not synchronisation
	}
}

// Tail returns the last n lines of a file, or a note why it cannot.
func Tail(path string, n int) string { return TailFrom(path, 0, n) }

// Size is the length of the file at path now (0 if it is missing): the
// offset a later TailFrom reads from, to show what a daemon logged during
// one step of a test only.
func Size(path string) int64 {
	st, err := os.Stat(path)
	if err != nil {
		return 0
	}
	return st.Size()
}

// TailFrom returns the last n lines written to a file past offset (a
// Size taken earlier), or a note why it cannot.
func TailFrom(path string, offset int64, n int) string {
	f, err := os.Open(path)
	if err != nil {
		return fmt.Sprintf("(%v)\n", err)
	}
	defer f.Close()
	if offset > 0 {
		if _, err := f.Seek(offset, io.SeekStart); err != nil {
			return fmt.Sprintf("(%v)\n", err)
		}
	}
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
