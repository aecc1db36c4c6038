package kubeapi

import (
	"bufio"
	"fmt"
	"net"
	"os"
	"os/exec"
	"strings"
	"syscall"
	"time"
)

// retryPorts runs start until it succeeds, retrying only when the process
// failed because a port picked as free was taken before it could bind.
func retryPorts(name string, start func(attempt int) (*process, error)) error {
	for attempt := 1; ; attempt++ {
		p, err := start(attempt)
		if err == nil {
			return nil
		}
		if p == nil {
			return fmt.Errorf("%s: %w", name, err)
		}
		p.stop()
		tail := tailFile(p.logPath, 30)
		if attempt < startAttempts && strings.Contains(tail, "address already in use") {
			continue
		}
		return fmt.Errorf("%s: %w\n--- last lines of %s ---\n%s", name, err, p.logPath, tail)
	}
}

func logName(name string, attempt int) string {
	if attempt == 1 {
		return name + ".log"
	}
	return fmt.Sprintf("%s.%d.log", name, attempt)
}

// freePorts returns n distinct loopback TCP ports that were free a moment
// ago. Another process may take one before we bind it; retryPorts handles
// that.
func freePorts(n int) ([]int, error) {
	var ports []int
	var ls []net.Listener
	defer func() {
		for _, l := range ls {
			l.Close()
		}
	}()
	for range n {
		l, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			return nil, err
		}
		ls = append(ls, l)
		ports = append(ports, l.Addr().(*net.TCPAddr).Port)
	}
	return ports, nil
}

// process is a child process whose output goes to a log file.
type process struct {
	name    string
	cmd     *exec.Cmd
	logPath string
	done    chan struct{} // closed when the process has exited
	err     error         // exit status, valid after done
}

func startProcess(name, bin, logPath string, args ...string) (*process, error) {
	if _, err := os.Stat(bin); err != nil {
		return nil, err
	}
	logf, err := os.OpenFile(logPath, os.O_CREATE|os.O_WRONLY|os.O_TRUNC, 0o600)
	if err != nil {
		return nil, err
	}
	cmd := exec.Command(bin, args...)
	cmd.Stdout = logf
	cmd.Stderr = logf
	cmd.SysProcAttr = sysProcAttr()
	if err := cmd.Start(); err != nil {
		logf.Close()
		return nil, fmt.Errorf("starting %s: %w", bin, err)
	}
	p := &process{name: name, cmd: cmd, logPath: logPath, done: make(chan struct{})}
	go func() {
		p.err = cmd.Wait()
		logf.Close()
		close(p.done)
	}()
	return p, nil
}

// waitUntil polls ready until it reports true, the process exits, or the
// timeout passes.
func (p *process) waitUntil(timeout time.Duration, ready func() bool) error {
	deadline := time.NewTimer(timeout)
	defer deadline.Stop()
	tick := time.NewTicker(pollInterval)
	defer tick.Stop()
	for {
		if ready() {
			return nil
		}
		select {
		case <-p.done:
			return fmt.Errorf("exited before it was ready: %v", p.err)
		case <-deadline.C:
			return fmt.Errorf("not ready after %v", timeout)
		case <-tick.C:
		}
	}
}

// stop asks the process to terminate and kills it if it does not within
// stopGrace. It is safe on a nil or already exited process.
func (p *process) stop() {
	if p == nil {
		return
	}
	select {
	case <-p.done:
		return
	default:
	}
	_ = p.cmd.Process.Signal(syscall.SIGTERM)
	t := time.NewTimer(stopGrace)
	defer t.Stop()
	select {
	case <-p.done:
	case <-t.C:
		_ = p.cmd.Process.Kill()
		<-p.done
	}
}

// kill ends the process at once and waits for it.
func (p *process) kill() {
	if p == nil {
		return
	}
	_ = p.cmd.Process.Kill()
	<-p.done
}

// tailFile returns the last n lines of a file, or a note why it cannot.
func tailFile(path string, n int) string {
	f, err := os.Open(path)
	if err != nil {
		return fmt.Sprintf("(%v)\n", err)
	}
	defer f.Close()
	// Logs of a short-lived server are small; keep a ring of lines.
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
