package haproxy

import (
	"bytes"
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

// stableDump runs fn between two dumps read through a Runtime and retries
// until both dumps are equal (srv_time_since_last_change counts seconds, so
// two dumps may differ), then returns that dump.
func stableDump(t *testing.T, rt *Runtime, fn func() error) string {
	t.Helper()
	var dump string
	eventually(t, 10*time.Second, "a stable dump", func() error {
		before, err := rt.ExecChecked(testCtx(t), []string{"show servers state"})
		if err != nil {
			return err
		}
		if err := fn(); err != nil {
			t.Fatalf("WriteServersState: %v", err)
		}
		after, err := rt.ExecChecked(testCtx(t), []string{"show servers state"})
		if err != nil {
			return err
		}
		if before[0] != after[0] {
			return errors.New("servers changed between the dumps")
		}
		dump = before[0]
		return nil
	})
	return dump
}

func TestWriteServersStateStreamsTheDump(t *testing.T) {
	const backends, slots = 40, 10
	p := startSlots(t, backends, slots)
	rt := NewRuntime(p.StatsSocket)
	t.Cleanup(func() { _ = rt.Close() })

	t.Run("whole", func(t *testing.T) {
		var buf bytes.Buffer
		dump := stableDump(t, rt, func() error {
			buf.Reset()
			return WriteServersState(testCtx(t), p.StatsSocket, &buf, nil)
		})
		// The Runtime's answer is trimmed; the file ends its last line.
		if want := dump + "\n"; buf.String() != want {
			t.Fatalf("file differs from the dump:\n%s\nwant\n%s", buf.String(), want)
		}
		if n := strings.Count(buf.String(), "\n"); n != 2+backends*slots {
			t.Fatalf("%d lines, want %d", n, 2+backends*slots)
		}
	})

	t.Run("filtered", func(t *testing.T) {
		// Keep the serving slots of even backends, located by the header.
		keepLine := func(header string) func(string) bool {
			cols := strings.Fields(strings.TrimPrefix(header, "#"))
			iBe, iAdmin := -1, -1
			for i, c := range cols {
				switch c {
				case "be_name":
					iBe = i
				case "srv_admin_state":
					iAdmin = i
				}
			}
			return func(line string) bool {
				f := strings.Fields(line)
				var n int
				fmt.Sscan(strings.TrimPrefix(f[iBe], "be"), &n)
				return n%2 == 0 && f[iAdmin] == "0"
			}
		}
		var header string
		filter := func(h string) func([]byte) bool {
			header = h
			keep := keepLine(h)
			return func(line []byte) bool { return keep(string(line)) }
		}
		var buf bytes.Buffer
		dump := stableDump(t, rt, func() error {
			buf.Reset()
			return WriteServersState(testCtx(t), p.StatsSocket, &buf, filter)
		})
		lines := strings.Split(dump, "\n")
		if header != lines[1] {
			t.Fatalf("filter built from %q, want the header %q", header, lines[1])
		}
		var want strings.Builder
		want.WriteString(lines[0] + "\n" + lines[1] + "\n")
		keep := keepLine(lines[1])
		kept := 0
		for _, l := range lines[2:] {
			if keep(l) {
				want.WriteString(l + "\n")
				kept++
			}
		}
		if kept != backends/2*slots/2 {
			t.Fatalf("the filter keeps %d lines, want %d: is the dump as expected?\n%s", kept, backends/2*slots/2, dump)
		}
		if buf.String() != want.String() {
			t.Fatalf("filtered file:\n%s\nwant\n%s", buf.String(), want.String())
		}
	})
}

func TestWriteServersStateErrors(t *testing.T) {
	p := startSlots(t, 2, 4)
	ctx := testCtx(t)

	err := WriteServersState(ctx, filepath.Join(t.TempDir(), "nothing.sock"), io.Discard, nil)
	if !errors.Is(err, ErrUnavailable) {
		t.Errorf("no socket: %v, want ErrUnavailable", err)
	}

	// HAProxy answers an error instead of a dump.
	err = streamServersState(ctx, p.StatsSocket, "show servers state nosuch", io.Discard, nil)
	if !errors.Is(err, ErrCommand) || !strings.Contains(err.Error(), "Can't find backend") {
		t.Errorf("error answer: %v, want ErrCommand quoting HAProxy", err)
	}

	cctx, cancel := context.WithCancel(ctx)
	cancel()
	err = WriteServersState(cctx, p.StatsSocket, io.Discard, nil)
	if !errors.Is(err, ErrUnavailable) || !errors.Is(err, context.Canceled) {
		t.Errorf("canceled: %v, want ErrUnavailable and context.Canceled", err)
	}

	// A failing writer is reported as such, not as HAProxy's failure.
	werr := errors.New("disk full")
	err = WriteServersState(ctx, p.StatsSocket, failingWriter{werr}, nil)
	if !errors.Is(err, werr) || errors.Is(err, ErrUnavailable) || errors.Is(err, ErrCommand) {
		t.Errorf("failing writer: %v, want only the writer's error", err)
	}
}

type failingWriter struct{ err error }

func (w failingWriter) Write([]byte) (int, error) { return 0, w.err }

// TestWriteServersStateCutShort feeds answers HAProxy only gives when
// something breaks (a worker stopping mid-dump), from a socket that plays
// them back: none may pass for a complete dump.
func TestWriteServersStateCutShort(t *testing.T) {
	const head = "1\n# be_id be_name srv_id srv_name srv_addr srv_port\n"
	for name, tc := range map[string]struct {
		answer string
		want   error
	}{
		"complete":        {head + "1 be s1 127.0.0.1 1\n\n", nil},
		"no end":          {head + "1 be s1 127.0.0.1 1\n", ErrUnavailable},
		"half a line":     {head + "1 be s1 127.0", ErrUnavailable},
		"nothing":         {"", ErrUnavailable},
		"version only":    {"1\n", ErrUnavailable},
		"wrong version":   {"2\n# be_name\n\n", ErrCommand},
		"no header":       {"1\nbe s1\n\n", ErrCommand},
		"line too long":   {head + strings.Repeat("x", dumpBufSize+1) + "\n\n", ErrCommand},
		"blank mid-dump":  {head + "1 be s1 127.0.0.1 1\n\n1 be s2 127.0.0.1 1\n\n", nil},
		"blank then cut":  {head + "\n1 be s2 127.0.0.1 1\n", ErrUnavailable},
		"header, no line": {head + "\n", nil},
	} {
		t.Run(name, func(t *testing.T) {
			sock := playback(t, tc.answer)
			var buf bytes.Buffer
			err := WriteServersState(testCtx(t), sock, &buf, nil)
			if tc.want == nil {
				if err != nil {
					t.Fatal(err)
				}
				if want := strings.ReplaceAll(strings.TrimRight(tc.answer, "\n"), "\n\n", "\n") + "\n"; buf.String() != want {
					t.Fatalf("wrote %q, want %q", buf.String(), want)
				}
				return
			}
			if !errors.Is(err, tc.want) {
				t.Fatalf("got %v, want %v", err, tc.want)
			}
		})
	}
}

// playback listens on a unix socket that answers every connection's first
// line with answer, then closes it, as HAProxy does in non-interactive mode.
func playback(t *testing.T, answer string) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), "play.sock")
	l, err := net.Listen("unix", path)
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
			go func() {
				defer c.Close()
				buf := make([]byte, 256)
				_, _ = c.Read(buf)
				_, _ = io.WriteString(c, answer)
			}()
		}
	}()
	return path
}

// The configuration decides a server's check and agent ports after a
// reload: HAProxy 2.6 would restore them from the state file over a new
// configuration's (a check moved from kube-proxy's /healthz port to a
// healthCheckNodePort kept asking the old port, and its server stayed
// DOWN), so WriteServersState writes them unset.
func TestWriteServersStateLeavesChecksToTheConfig(t *testing.T) {
	dir := t.TempDir()
	state := filepath.Join(dir, "state")
	config := func(checkPort, agentPort int) string {
		return strings.Replace(haproxytest.MinimalConfig(dir), "\ndefaults\n",
			"    server-state-file "+state+"\n\ndefaults\n    load-server-state-from-file global\n", 1) + fmt.Sprintf(`
backend be
    option httpchk GET /
    server s1 127.0.0.1:30001 check inter 1h port %d
    server s2 127.0.0.1:30002 agent-check agent-addr 127.0.0.1 agent-port %d agent-inter 1h
`, checkPort, agentPort)
	}
	path := filepath.Join(dir, "haproxy.cfg")
	if err := os.WriteFile(path, []byte(config(10256, 1)), 0o600); err != nil {
		t.Fatal(err)
	}
	p := haproxytest.Start(t, dir, path)
	ports := func() map[string]string {
		rt := NewRuntime(p.StatsSocket) // a new connection: the worker after a reload
		defer rt.Close()
		out, err := rt.ExecChecked(testCtx(t), []string{"show servers state be"})
		if err != nil {
			t.Fatal(err)
		}
		lines := strings.Split(out[0], "\n")
		cols := strings.Fields(strings.TrimPrefix(lines[1], "#"))
		got := map[string]string{}
		for _, l := range lines[2:] {
			f := strings.Fields(l)
			for i, c := range cols {
				if (c == "srv_check_port" || c == "srv_agent_port") && i < len(f) {
					got[f[3]+" "+c] = f[i]
				}
			}
		}
		return got
	}
	want := map[string]string{"s1 srv_check_port": "10256", "s2 srv_agent_port": "1"}
	for k, v := range want {
		if got := ports()[k]; got != v {
			t.Fatalf("before the reload %s = %q, want %q (the dump carries the configured ports)", k, got, v)
		}
	}
	f, err := os.Create(state)
	if err != nil {
		t.Fatal(err)
	}
	if err := WriteServersState(testCtx(t), p.StatsSocket, f, nil); err != nil {
		t.Fatal(err)
	}
	if err := f.Close(); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, []byte(config(30147, 2)), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := NewMaster(p.MasterSocket).Reload(testCtx(t)); err != nil {
		t.Fatal(err)
	}
	got := ports()
	for k, v := range map[string]string{"s1 srv_check_port": "30147", "s2 srv_agent_port": "2"} {
		if got[k] != v {
			t.Errorf("after the reload with the state file %s = %q, want %q, the new configuration's", k, got[k], v)
		}
	}
}
