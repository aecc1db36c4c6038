// Package haproxytest runs a real HAProxy in master-worker mode for tests.
package haproxytest

import (
	"bytes"
	"fmt"
	"io"
	"math/rand/v2"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"
)

const (
	startTimeout = 15 * time.Second
	killTimeout  = 10 * time.Second
	pollEvery    = 5 * time.Millisecond
)

// Process is a real haproxy running as `haproxy -W -S <dir>/master.sock -f <cfg>`
// in its own process group.
type Process struct {
	Dir, ConfigPath, MasterSocket, StatsSocket string
	// NetNS, when set, is the file of a network namespace haproxy runs in
	// (through nsenter, which execs haproxy: the PID is haproxy's).
	NetNS string
	// Bin is the haproxy binary run ("": Bin()).
	Bin string
	// More: configuration files read after ConfigPath, each with a -f of
	// its own (StartConfigs).
	More []string
	// Env: NAME=VALUE entries added to this process's environment for
	// haproxy (StartWithEnv).
	Env []string

	mu      sync.Mutex
	cmd     *exec.Cmd
	done    chan struct{} // closed when the master has exited
	out     *LockedBuffer
	cleanup bool
}

// Bin returns the haproxy binary tests use: $HAPROXY_BIN, else "haproxy"
// from PATH, else /usr/sbin/haproxy. `make test-haproxy VERSION=3.0` sets
// HAPROXY_BIN to what hack/haproxy-version.sh prints, so every test that
// starts or checks with Bin runs that version.
func Bin() string {
	if b := os.Getenv("HAPROXY_BIN"); b != "" {
		return b
	}
	if b, err := exec.LookPath("haproxy"); err == nil {
		return b
	}
	return "/usr/sbin/haproxy"
}

// StatsSocketPath is where configs used with Start must put the worker's
// stats socket.
func StatsSocketPath(dir string) string { return filepath.Join(dir, "stats.sock") }

// MasterSocketPath is the master CLI socket Start passes to -S.
func MasterSocketPath(dir string) string { return filepath.Join(dir, "master.sock") }

// MinimalConfig returns a valid configuration: global section for
// master-worker with the admin stats socket at StatsSocketPath(dir), tcp
// defaults, and no proxies.
func MinimalConfig(dir string) string {
	return fmt.Sprintf(`global
    master-worker
    stats socket %s mode 600 level admin expose-fd listeners
    stats timeout 1m

defaults
    mode tcp
    timeout connect 2s
    timeout client 30s
    timeout server 30s
`, StatsSocketPath(dir))
}

// FreePort returns a TCP port on 127.0.0.1 that was free a moment ago. It
// is chosen below the kernel's ephemeral range (32768 and up by default),
// at random: a port the kernel hands out with ":0" is also one it may give
// to any client socket's local end in the meantime (other test packages'
// connections), which once made HAProxy fail to bind it in CI.
//
// It never returns the same port twice in one process: a test that takes
// a dozen ports before binding any (Services created, then the
// controller started) once got one port twice from the random draw, and
// the second Service was refused with a port conflict.
func FreePort(t testing.TB) int {
	t.Helper()
	handedMu.Lock()
	defer handedMu.Unlock()
	for range 100 {
		port := freePortLow + rand.IntN(freePortHigh-freePortLow)
		if handed[port] {
			continue
		}
		l, err := net.Listen("tcp", "127.0.0.1:"+strconv.Itoa(port))
		if err == nil {
			l.Close()
			handed[port] = true
			return port
		}
	}
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatalf("free port: %v", err)
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port
}

// The range FreePort draws from: under the ephemeral ports and under the
// benchmark's frontends and nodePorts (hack/bench: 20000 and 30000 up).
const freePortLow, freePortHigh = 10000, 19999

// handed holds the ports FreePort returned in this process.
var (
	handedMu sync.Mutex
	handed   = map[int]bool{}
)

// Start runs haproxy with cfgPath (which must already exist and declare the
// stats socket at StatsSocketPath(dir)), waits until the master and the
// worker sockets answer, and registers a cleanup that kills it.
func Start(t testing.TB, dir, cfgPath string) *Process {
	t.Helper()
	return StartInNetNS(t, dir, cfgPath, "")
}

// StartInNetNS is Start inside the network namespace whose file is netns
// (e.g. /run/netns/NAME; "": the test's own): the frontends bind there,
// the sockets stay files in dir.
func StartInNetNS(t testing.TB, dir, cfgPath, netns string) *Process {
	t.Helper()
	return StartWithInNetNS(t, "", dir, cfgPath, netns)
}

// StartWithInNetNS is StartInNetNS with the haproxy binary bin ("": Bin()).
func StartWithInNetNS(t testing.TB, bin, dir, cfgPath, netns string) *Process {
	t.Helper()
	p := &Process{
		Dir:          dir,
		ConfigPath:   cfgPath,
		MasterSocket: MasterSocketPath(dir),
		StatsSocket:  StatsSocketPath(dir),
		NetNS:        netns,
		Bin:          bin,
	}
	p.launch(t)
	return p
}

// StartConfigs is Start with more configuration files after cfgPath, each
// passed with a -f of its own: HAProxy reads them in that order at start
// and on every reload, whatever rewrites cfgPath.
func StartConfigs(t testing.TB, dir, cfgPath string, more ...string) *Process {
	t.Helper()
	p := &Process{Dir: dir, ConfigPath: cfgPath, MasterSocket: MasterSocketPath(dir), StatsSocket: StatsSocketPath(dir), More: more}
	p.launch(t)
	return p
}

// StartWith is Start with another haproxy binary than Bin() (several
// versions side by side in one test).
func StartWith(t testing.TB, bin, dir, cfgPath string) *Process {
	t.Helper()
	return StartWithEnv(t, bin, nil, dir, cfgPath)
}

// StartWithEnv is StartWith with env (NAME=VALUE entries) added to
// haproxy's environment: a benchmark's runs side by side with and without
// a setting only the environment makes (glibc's tunables).
func StartWithEnv(t testing.TB, bin string, env []string, dir, cfgPath string) *Process {
	t.Helper()
	p := &Process{Dir: dir, ConfigPath: cfgPath, MasterSocket: MasterSocketPath(dir), StatsSocket: StatsSocketPath(dir), Bin: bin, Env: env}
	p.launch(t)
	return p
}

func (p *Process) launch(t testing.TB) {
	t.Helper()
	p.mu.Lock()
	out := &LockedBuffer{}
	bin := p.Bin
	if bin == "" {
		bin = Bin()
	}
	args := []string{"-W", "-S", p.MasterSocket, "-f", p.ConfigPath}
	for _, f := range p.More {
		args = append(args, "-f", f)
	}
	cmd := exec.Command(bin, args...)
	if p.NetNS != "" {
		cmd = exec.Command("nsenter", append([]string{"--net=" + p.NetNS, "--", bin}, args...)...)
	}
	cmd.Dir = p.Dir
	if len(p.Env) > 0 {
		cmd.Env = append(os.Environ(), p.Env...)
	}
	cmd.Stdout, cmd.Stderr = out, out
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	if err := cmd.Start(); err != nil {
		p.mu.Unlock()
		t.Fatalf("haproxytest: start %s: %v", bin, err)
	}
	done := make(chan struct{})
	go func() { _ = cmd.Wait(); close(done) }()
	p.cmd, p.done, p.out = cmd, done, out
	if !p.cleanup {
		p.cleanup = true
		t.Cleanup(func() { p.Kill(t) })
	}
	p.mu.Unlock()

	deadline := time.Now().Add(startTimeout)
	var lastErr error
	for time.Now().Before(deadline) {
		select {
		case <-done:
			t.Fatalf("haproxytest: haproxy exited during startup (%v):\n%s", cmd.ProcessState, out.String())
		default:
		}
		if lastErr = p.ready(); lastErr == nil {
			return
		}
		wait(done, pollEvery)
	}
	p.Kill(t)
	t.Fatalf("haproxytest: haproxy not ready after %s: %v\n%s", startTimeout, lastErr, out.String())
}

// ready reports nil once the master lists a worker and the worker's stats
// socket answers.
func (p *Process) ready() error {
	procs, err := oneShot(p.MasterSocket, "show proc")
	if err != nil {
		return fmt.Errorf("master socket: %w", err)
	}
	_, workers, _ := strings.Cut(procs, "# workers\n")
	if f := strings.Fields(workers); len(f) < 2 || f[1] != "worker" {
		return fmt.Errorf("master lists no worker yet: %q", procs)
	}
	info, err := oneShot(p.StatsSocket, "show info")
	if err != nil {
		return fmt.Errorf("stats socket: %w", err)
	}
	if !strings.Contains(info, "Pid:") {
		return fmt.Errorf("stats socket: unexpected show info answer %q", info)
	}
	return nil
}

// Output returns what haproxy printed on stdout and stderr so far.
func (p *Process) Output() string {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.out.String()
}

// MasterPID returns the master's process id, or 0 after Kill.
func (p *Process) MasterPID() int {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.cmd == nil {
		return 0
	}
	return p.cmd.Process.Pid
}

// Kill sends SIGKILL to the master and its workers (the whole process
// group) and waits until they are gone. It is idempotent.
func (p *Process) Kill(t testing.TB) {
	t.Helper()
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.cmd == nil {
		return
	}
	pgid := p.cmd.Process.Pid
	_ = syscall.Kill(-pgid, syscall.SIGKILL)
	select {
	case <-p.done:
	case <-time.After(killTimeout):
		t.Errorf("haproxytest: master %d still running %s after SIGKILL", pgid, killTimeout)
		return
	}
	// Workers are reparented when the master dies; wait until none is
	// alive (zombies whose parent never reaps them do not count).
	deadline := time.Now().Add(killTimeout)
	for alive := liveInGroup(pgid); len(alive) > 0; alive = liveInGroup(pgid) {
		if time.Now().After(deadline) {
			t.Errorf("haproxytest: processes %v of group %d survive SIGKILL", alive, pgid)
			return
		}
		_ = syscall.Kill(-pgid, syscall.SIGKILL)
		wait(nil, pollEvery)
	}
	p.cmd = nil
}

// Restart kills haproxy and starts it again with the same files.
func (p *Process) Restart(t testing.TB) {
	t.Helper()
	p.Kill(t)
	p.launch(t)
}

// liveInGroup lists the non-zombie processes whose process group is pgid.
func liveInGroup(pgid int) []int {
	ents, err := os.ReadDir("/proc")
	if err != nil {
		return nil
	}
	var pids []int
	for _, e := range ents {
		pid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		b, err := os.ReadFile(filepath.Join("/proc", e.Name(), "stat"))
		if err != nil {
			continue
		}
		// pid (comm) state ppid pgrp ...
		i := bytes.LastIndexByte(b, ')')
		if i < 0 {
			continue
		}
		f := strings.Fields(string(b[i+1:]))
		if len(f) < 3 || f[0] == "Z" || f[0] == "X" || f[2] != strconv.Itoa(pgid) {
			continue
		}
		pids = append(pids, pid)
	}
	return pids
}

// wait blocks for d, or until stop is closed.
func wait(stop <-chan struct{}, d time.Duration) {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-stop:
	case <-t.C:
	}
}

// oneShot sends one command on a fresh connection and reads to EOF.
func oneShot(path, cmd string) (string, error) {
	c, err := net.DialTimeout("unix", path, time.Second)
	if err != nil {
		return "", err
	}
	conn := c.(*net.UnixConn)
	defer conn.Close()
	_ = conn.SetDeadline(time.Now().Add(2 * time.Second))
	if _, err := io.WriteString(conn, cmd+"\n"); err != nil {
		return "", err
	}
	if err := conn.CloseWrite(); err != nil {
		return "", err
	}
	b, err := io.ReadAll(conn)
	return string(b), err
}

// LockedBuffer is a bytes.Buffer safe for one writer (a child process's
// output) and concurrent readers.
type LockedBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (l *LockedBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *LockedBuffer) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}
