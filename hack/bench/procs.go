package main

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/haproxy-k8s-sync/haproxy-k8s-sync/internal/haproxy"
	"github.com/haproxy-k8s-sync/haproxy-k8s-sync/internal/haproxy/haproxytest"
)

// proc is a child process in its own process group, its output in a log file.
type proc struct {
	name string
	cmd  *exec.Cmd
	log  string
	done chan struct{}
}

// startProc runs bin; leading KEY=VALUE arguments are added to its
// environment.
func startProc(name, logPath string, stdout io.Writer, bin string, args ...string) (*proc, error) {
	var env []string
	for len(args) > 0 && strings.Contains(args[0], "=") && !strings.HasPrefix(args[0], "-") {
		env, args = append(env, args[0]), args[1:]
	}
	if env != nil {
		env = append(os.Environ(), env...)
	}
	return startProcEnv(name, logPath, stdout, bin, env, args...)
}

// startController runs the controller under test, with this process's
// environment less what would configure it (controllerEnv), plus extra.
func startController(logPath, bin string, extra []string, args ...string) (*proc, error) {
	return startProcEnv("controller", logPath, nil, bin, controllerEnv(extra), args...)
}

// startProcEnv runs bin with environment env (nil: this process's).
func startProcEnv(name, logPath string, stdout io.Writer, bin string, env []string, args ...string) (*proc, error) {
	lf, err := os.Create(logPath)
	if err != nil {
		return nil, err
	}
	cmd := exec.Command(bin, args...)
	cmd.Env = env
	cmd.Stderr = lf
	cmd.Stdout = lf
	if stdout != nil {
		cmd.Stdout = stdout
	}
	cmd.SysProcAttr = childAttr()
	if err := cmd.Start(); err != nil {
		lf.Close()
		return nil, fmt.Errorf("start %s: %w", name, err)
	}
	p := &proc{name: name, cmd: cmd, log: logPath, done: make(chan struct{})}
	go func() { _ = cmd.Wait(); lf.Close(); close(p.done) }()
	return p, nil
}

func (p *proc) pid() int { return p.cmd.Process.Pid }

func (p *proc) exited() bool {
	select {
	case <-p.done:
		return true
	default:
		return false
	}
}

// stop sends sig to the process group, then SIGKILL after grace.
func (p *proc) stop(sig syscall.Signal, grace time.Duration) {
	if p == nil || p.exited() {
		return
	}
	_ = syscall.Kill(-p.pid(), sig)
	select {
	case <-p.done:
	case <-time.After(grace):
		_ = syscall.Kill(-p.pid(), syscall.SIGKILL)
		<-p.done
	}
}

// buildController builds the controller binary into dir.
func buildController(dir string) (string, error) {
	out := filepath.Join(dir, "haproxy-k8s-sync")
	cmd := exec.Command("go", "build", "-o", out, "./cmd/haproxy-k8s-sync")
	cmd.Stdout, cmd.Stderr = os.Stderr, os.Stderr
	if err := cmd.Run(); err != nil {
		return "", fmt.Errorf("go build: %w", err)
	}
	return out, nil
}

// haproxyProc is an HAProxy in master-worker mode started from the config
// `haproxy-k8s-sync init` wrote.
type haproxyProc struct {
	*proc
	dir, cfg, master, stats, state string
}

// startHAProxy starts HAProxy from the config `init` (with initArgs)
// wrote into dir.
func startHAProxy(ctlBin, dir string, initArgs ...string) (*haproxyProc, error) {
	h := &haproxyProc{dir: dir, cfg: filepath.Join(dir, "haproxy.cfg"), master: filepath.Join(dir, "master.sock"),
		stats: filepath.Join(dir, "stats.sock"), state: filepath.Join(dir, "server-state")}
	init := exec.Command(ctlBin, append([]string{"init", "--haproxy-config", h.cfg, "--stats-socket", h.stats, "--state-file", h.state, "--force"}, initArgs...)...)
	if out, err := init.CombinedOutput(); err != nil {
		return nil, fmt.Errorf("init: %v: %s", err, out)
	}
	p, err := startProc("haproxy", filepath.Join(dir, "haproxy.log"), nil, haproxytest.Bin(), "-W", "-S", h.master, "-f", h.cfg)
	if err != nil {
		return nil, err
	}
	h.proc = p
	m := haproxy.NewMaster(h.master)
	deadline := time.Now().Add(15 * time.Second)
	for time.Now().Before(deadline) {
		if p.exited() {
			return nil, fmt.Errorf("haproxy exited at start, see %s", p.log)
		}
		ctx, cancel := context.WithTimeout(context.Background(), time.Second)
		pr, err := m.ShowProc(ctx)
		cancel()
		if err == nil && len(pr.Workers) > 0 {
			if _, err := os.Stat(h.stats); err == nil {
				return h, nil
			}
		}
		time.Sleep(20 * time.Millisecond)
	}
	p.stop(syscall.SIGKILL, time.Second)
	return nil, fmt.Errorf("haproxy not ready after 15s, see %s", p.log)
}

// procStatus reads VmRSS, VmHWM and RssFile (KiB) of pid. RssFile is
// the part of VmRSS that is file pages, mostly the binary's own text and
// data mapped in: how much of it depends on the page cache (a binary
// written in large writes is mapped in large folios by ext4 on 6.x
// kernels), not on what the process allocates (BENCHMARKS.md, "HTTP at
// scale").
func procStatus(pid int) (rss, hwm, file int64) {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		return 0, 0, 0
	}
	sc := bufio.NewScanner(bytes.NewReader(b))
	for sc.Scan() {
		f := strings.Fields(sc.Text())
		if len(f) < 2 {
			continue
		}
		v, _ := strconv.ParseInt(f[1], 10, 64)
		switch f[0] {
		case "VmRSS:":
			rss = v
		case "VmHWM:":
			hwm = v
		case "RssFile:":
			file = v
		}
	}
	return rss, hwm, file
}

// cpuSeconds is utime+stime of pid.
func cpuSeconds(pid int) float64 {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return 0
	}
	// Fields after the command name (which may contain spaces).
	s := string(b)
	i := strings.LastIndexByte(s, ')')
	if i < 0 {
		return 0
	}
	f := strings.Fields(s[i+1:])
	if len(f) < 13 {
		return 0
	}
	ut, _ := strconv.ParseFloat(f[11], 64)
	st, _ := strconv.ParseFloat(f[12], 64)
	return (ut + st) / 100 // USER_HZ is 100 on Linux
}

// loadResult is what the load process prints as its only stdout line.
type loadResult struct {
	Total    int    `json:"total"`
	Failed   int    `json:"failed"`
	FirstErr string `json:"first_err,omitempty"`
}

// loadProc is the separate load generator: this binary re-executed with
// -load-target. It stops when its stdin closes, after its duration, or
// after its maximum number of connections.
type loadProc struct {
	*proc
	stdin io.WriteCloser
	out   *bytes.Buffer
}

func startLoad(dir string, targets []string, rate int, dur time.Duration, maxConns int) (*loadProc, error) {
	self, err := os.Executable()
	if err != nil {
		return nil, err
	}
	out := &bytes.Buffer{}
	lf, err := os.Create(filepath.Join(dir, "load.log"))
	if err != nil {
		return nil, err
	}
	cmd := exec.Command(self, "-load-target", strings.Join(targets, ","), "-load-rate", strconv.Itoa(rate),
		"-load-duration", dur.String(), "-load-max", strconv.Itoa(maxConns))
	cmd.Stdout, cmd.Stderr = out, lf
	stdin, err := cmd.StdinPipe()
	if err != nil {
		return nil, err
	}
	cmd.SysProcAttr = childAttr()
	if err := cmd.Start(); err != nil {
		return nil, err
	}
	p := &proc{name: "load", cmd: cmd, log: lf.Name(), done: make(chan struct{})}
	go func() { _ = cmd.Wait(); lf.Close(); close(p.done) }()
	return &loadProc{proc: p, stdin: stdin, out: out}, nil
}

// finish asks the load process to stop and returns its counts.
func (l *loadProc) finish() (loadResult, error) {
	_ = l.stdin.Close()
	select {
	case <-l.done:
	case <-time.After(30 * time.Second):
		l.stop(syscall.SIGKILL, time.Second)
		return loadResult{}, fmt.Errorf("load process did not stop")
	}
	var r loadResult
	line := strings.TrimSpace(l.out.String())
	if err := json.Unmarshal([]byte(line), &r); err != nil {
		return r, fmt.Errorf("load process output %q: %w (log %s)", line, err, l.log)
	}
	return r, nil
}

// childAttr puts a child in its own process group (stopped as a group) and
// has the kernel kill it if the benchmark dies without stopping it.
func childAttr() *syscall.SysProcAttr {
	return &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
}
