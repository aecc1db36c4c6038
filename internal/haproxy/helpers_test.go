package haproxy

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/haproxy-k8s-sync/haproxy-k8s-sync/internal/haproxy/haproxytest"
)

// lb is a running haproxy with a tcp frontend and a backend "be" of four
// disabled, health-checked slots s1..s4.
type lb struct {
	proc    *haproxytest.Process
	rt      *Runtime
	master  *Master
	fePort  int
	goodCfg string
}

func lbConfig(dir string, fePort int) string {
	return haproxytest.MinimalConfig(dir) + fmt.Sprintf(`
frontend fe
    bind 127.0.0.1:%d
    default_backend be

backend be
    balance roundrobin
    default-server check inter 100ms rise 1 fall 1
    server s1 127.0.0.1:1 disabled
    server s2 127.0.0.1:1 disabled
    server s3 127.0.0.1:1 disabled
    server s4 127.0.0.1:1 disabled
`, fePort)
}

func startLB(t testing.TB, extraGlobal string) *lb {
	t.Helper()
	dir := t.TempDir()
	port := haproxytest.FreePort(t)
	cfg := lbConfig(dir, port)
	if extraGlobal != "" {
		cfg = strings.Replace(cfg, "    master-worker\n", "    master-worker\n"+extraGlobal, 1)
	}
	return startConfig(t, dir, cfg, port)
}

// startConfig runs haproxy with cfg (written to dir/haproxy.cfg), whose
// frontend listens on fePort.
func startConfig(t testing.TB, dir, cfg string, fePort int) *lb {
	t.Helper()
	path := filepath.Join(dir, "haproxy.cfg")
	if err := os.WriteFile(path, []byte(cfg), 0o600); err != nil {
		t.Fatal(err)
	}
	p := haproxytest.Start(t, dir, path)
	rt := NewRuntime(p.StatsSocket)
	t.Cleanup(func() { _ = rt.Close() })
	return &lb{proc: p, rt: rt, master: NewMaster(p.MasterSocket), fePort: fePort, goodCfg: cfg}
}

// version is the running worker's HAProxy version (show info): tests that
// compare HAProxy's own words know which release said them.
func (l *lb) version(t testing.TB) Version {
	t.Helper()
	info, err := l.rt.ShowInfo(testCtx(t))
	if err != nil {
		t.Fatal(err)
	}
	v, err := ParseVersion(info["Version"])
	if err != nil {
		t.Fatal(err)
	}
	return v
}

// greeter is a tiny TCP server on 127.0.0.1 that writes msg and closes.
func greeter(t testing.TB, msg string) int {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = l.Close() })
	go func() {
		for {
			c, err := l.Accept()
			if err != nil {
				return
			}
			_, _ = io.WriteString(c, msg)
			_ = c.Close()
		}
	}()
	return l.Addr().(*net.TCPAddr).Port
}

func testCtx(t testing.TB) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	t.Cleanup(cancel)
	return ctx
}

// eventually polls cond every few milliseconds until it returns nil or the
// deadline passes.
func eventually(t testing.TB, within time.Duration, what string, cond func() error) {
	t.Helper()
	deadline := time.Now().Add(within)
	var err error
	for {
		if err = cond(); err == nil {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s: not true after %s: %v", what, within, err)
		}
		tm := time.NewTimer(10 * time.Millisecond)
		<-tm.C
	}
}

func (l *lb) server(t testing.TB, name string) ServerState {
	t.Helper()
	states, err := l.rt.ShowServersState(testCtx(t))
	if err != nil {
		t.Fatalf("show servers state: %v", err)
	}
	for _, s := range states {
		if s.Backend == "be" && s.Server == name {
			return s
		}
	}
	t.Fatalf("server be/%s not in show servers state", name)
	return ServerState{}
}

func (l *lb) waitOpState(t testing.TB, name string, op int) ServerState {
	t.Helper()
	var s ServerState
	eventually(t, 5*time.Second, "be/"+name+" op state", func() error {
		if s = l.server(t, name); s.OpState != op {
			return fmt.Errorf("op state %d, want %d (%+v)", s.OpState, op, s)
		}
		return nil
	})
	return s
}

// dialFrontend connects through haproxy and returns what the server sent.
func (l *lb) dialFrontend() (string, error) {
	c, err := net.DialTimeout("tcp", fmt.Sprintf("127.0.0.1:%d", l.fePort), 2*time.Second)
	if err != nil {
		return "", err
	}
	defer c.Close()
	_ = c.SetDeadline(time.Now().Add(2 * time.Second))
	b, err := io.ReadAll(c)
	if err != nil {
		return string(b), err
	}
	if len(b) == 0 {
		return "", errors.New("connection closed without data")
	}
	return string(b), nil
}

// useSlot points be/<name> at 127.0.0.1:port and makes it ready.
func (l *lb) useSlot(t testing.TB, name string, port int) []string {
	t.Helper()
	ans, err := l.rt.ExecChecked(testCtx(t), []string{
		fmt.Sprintf("set server be/%s addr 127.0.0.1 port %d", name, port),
		fmt.Sprintf("set server be/%s state ready", name),
	})
	if err != nil {
		t.Fatalf("exec: %v", err)
	}
	return ans
}

func atoi(t testing.TB, s string) int {
	t.Helper()
	var n int
	if _, err := fmt.Sscan(s, &n); err != nil {
		t.Fatalf("atoi %q: %v", s, err)
	}
	return n
}

// startSlots runs haproxy with backends be0..be<n-1> of slots s1..s<m>:
// the first half of each backend's slots point at distinct addresses and
// serve (no checks, so their state holds still), the rest are disabled.
func startSlots(t testing.TB, backends, slots int) *haproxytest.Process {
	t.Helper()
	dir := t.TempDir()
	var b strings.Builder
	b.WriteString(haproxytest.MinimalConfig(dir))
	for i := range backends {
		fmt.Fprintf(&b, "\nbackend be%d\n", i)
		for j := 1; j <= slots; j++ {
			if j <= slots/2 {
				fmt.Fprintf(&b, "    server s%d 127.0.%d.%d:%d\n", j, i/250, i%250+1, 30000+j)
			} else {
				fmt.Fprintf(&b, "    server s%d 127.0.0.1:1 disabled\n", j)
			}
		}
	}
	path := filepath.Join(dir, "haproxy.cfg")
	if err := os.WriteFile(path, []byte(b.String()), 0o600); err != nil {
		t.Fatal(err)
	}
	return haproxytest.Start(t, dir, path)
}
