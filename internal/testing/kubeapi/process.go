package kubeapi

import (
	"errors"
	"fmt"
	"net"
	"strings"
	"time"

	"github.com/haproxy-k8s-sync/haproxy-k8s-sync/internal/testing/proc"
)

// retryPorts runs start until it succeeds, retrying only when the process
// failed because a port picked as free was taken before it could bind.
func retryPorts(name string, start func(attempt int) (*proc.Process, error)) error {
	for attempt := 1; ; attempt++ {
		p, err := start(attempt)
		if err == nil {
			return nil
		}
		if p == nil {
			return fmt.Errorf("%s: %w", name, err)
		}
		p.Stop(stopGrace)
		tail := p.Tail(30)
		if attempt < startAttempts && strings.Contains(tail, "address already in use") {
			continue
		}
		return fmt.Errorf("%s: %w\n--- last lines of %s ---\n%s", name, err, p.LogPath, tail)
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

// startProcess runs bin with args, its output in logPath (truncated).
func startProcess(name, bin, logPath string, args ...string) (*proc.Process, error) {
	return proc.Start(name, logPath, bin, proc.Options{}, args...)
}

// waitUntil polls ready until it reports true, p exits, or timeout passes.
func waitUntil(p *proc.Process, timeout time.Duration, ready func() bool) error {
	return proc.WaitFor(timeout, pollInterval, p, func() error {
		if ready() {
			return nil
		}
		return errNotReady
	})
}

var errNotReady = errors.New("not ready")
