package proc

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

func TestProcess(t *testing.T) {
	for _, tc := range []struct {
		name   string
		script string
		end    func(p *Process)
		want   string // in Err(), "" for a clean exit
	}{
		{"stop ends a process that honours SIGTERM", "trap 'exit 0' TERM; echo up; while :; do sleep 0.05; done", func(p *Process) { p.Stop(5 * time.Second) }, ""},
		{"stop kills one that ignores SIGTERM", "trap '' TERM; echo up; while :; do sleep 0.05; done", func(p *Process) { p.Stop(200 * time.Millisecond) }, "killed"},
		{"kill", "echo up; while :; do sleep 0.05; done", func(p *Process) { p.Kill() }, "killed"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			log := filepath.Join(t.TempDir(), "p.log")
			p, err := Start("p", log, "/bin/sh", Options{}, "-c", tc.script)
			if err != nil {
				t.Fatal(err)
			}
			if err := WaitFor(5*time.Second, 10*time.Millisecond, p, func() error {
				if strings.Contains(p.Tail(1), "up") {
					return nil
				}
				return errors.New("no output yet")
			}); err != nil {
				t.Fatal(err)
			}
			tc.end(p)
			if !p.Exited() {
				t.Fatal("still running")
			}
			got := ""
			if p.Err() != nil {
				got = p.Err().Error()
			}
			if (tc.want == "") != (got == "") || !strings.Contains(got, tc.want) {
				t.Errorf("exit: %q, want %q", got, tc.want)
			}
		})
	}
}

func TestWaitForReportsTheDeath(t *testing.T) {
	log := filepath.Join(t.TempDir(), "p.log")
	p, err := Start("dies", log, "/bin/sh", Options{}, "-c", "echo the reason; exit 3")
	if err != nil {
		t.Fatal(err)
	}
	err = WaitFor(10*time.Second, 10*time.Millisecond, p, func() error { return errors.New("never ready") })
	if err == nil || !strings.Contains(err.Error(), "exit status 3") || !strings.Contains(err.Error(), "the reason") {
		t.Errorf("error %v: want the exit status and the log's end", err)
	}
}

func TestAppendKeepsTheLog(t *testing.T) {
	log := filepath.Join(t.TempDir(), "p.log")
	for i, o := range []Options{{}, {Append: true}} {
		p, err := Start("p", log, "/bin/echo", o, "run", string(rune('a'+i)))
		if err != nil {
			t.Fatal(err)
		}
		<-p.Done()
	}
	if got, _ := os.ReadFile(log); string(got) != "run a\nrun b\n" {
		t.Errorf("log %q, want both runs", got)
	}
	if got := Tail(filepath.Join(t.TempDir(), "none"), 3); !strings.Contains(got, "no such file") {
		t.Errorf("Tail of a missing file: %q", got)
	}
}

func TestTailFrom(t *testing.T) {
	log := filepath.Join(t.TempDir(), "p.log")
	if err := os.WriteFile(log, []byte("before 1\nbefore 2\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	off := Size(log)
	if got := TailFrom(log, off, 5); got != "(empty)\n" {
		t.Errorf("nothing written since: %q", got)
	}
	f, err := os.OpenFile(log, os.O_APPEND|os.O_WRONLY, 0)
	if err != nil {
		t.Fatal(err)
	}
	_, _ = f.WriteString("after 1\nafter 2\nafter 3\n")
	f.Close()
	for _, tc := range []struct {
		n    int
		want string
	}{
		{5, "after 1\nafter 2\nafter 3\n"},
		{2, "after 2\nafter 3\n"},
	} {
		if got := TailFrom(log, off, tc.n); got != tc.want {
			t.Errorf("TailFrom(%d lines) = %q, want %q", tc.n, got, tc.want)
		}
	}
	if got := Tail(log, 2); got != "after 2\nafter 3\n" {
		t.Errorf("Tail = %q", got)
	}
	if got := Size(filepath.Join(t.TempDir(), "none")); got != 0 {
		t.Errorf("Size of a missing file: %d", got)
	}
}

// A tier's process runs with one Go processor unless the environment
// names its own: what the process itself sees in its environment.
func TestTierGOMAXPROCS(t *testing.T) {
	for _, tc := range []struct {
		name string
		env  []string
		want string
	}{
		{"own environment", nil, "1"},
		{"given, without", []string{"PATH=/usr/bin:/bin"}, "1"},
		{"given, with its own", []string{"PATH=/usr/bin:/bin", "GOMAXPROCS=3"}, "3"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if tc.env == nil {
				t.Setenv("GOMAXPROCS", "")
				os.Unsetenv("GOMAXPROCS")
			}
			log := filepath.Join(t.TempDir(), "p.log")
			p, err := Start("env", log, "/bin/sh", Options{Env: tc.env}, "-c", `echo "GOMAXPROCS=$GOMAXPROCS"`)
			if err != nil {
				t.Fatal(err)
			}
			select {
			case <-p.Done():
			case <-time.After(10 * time.Second):
				t.Fatal("sh did not exit")
			}
			if got := strings.TrimSpace(Tail(log, 1)); got != "GOMAXPROCS="+tc.want {
				t.Errorf("the process saw %q, want GOMAXPROCS=%s", got, tc.want)
			}
		})
	}
}
