package runas

import (
	"fmt"
	"os"
	"os/exec"
	"strings"
	"testing"

	"golang.org/x/sys/unix"
)

// helper: when HKS_RUNAS_HELPER is set the test binary is the process
// under test: it calls Exec to become uid 99 and run cat on its own
// status.
func TestMain(m *testing.M) {
	if os.Getenv("HKS_RUNAS_HELPER") != "" {
		err := Exec(99, 99, []uintptr{unix.CAP_NET_ADMIN, unix.CAP_NET_RAW}, "/bin/cat", []string{"cat", "/proc/self/status"}, nil)
		fmt.Fprintln(os.Stderr, err)
		os.Exit(3)
	}
	os.Exit(m.Run())
}

// TestExec: a process started as root in a container's shape (a
// bounding set of the two capabilities to keep, CAP_SETUID and
// CAP_SETGID; no_new_privs, as allowPrivilegeEscalation: false sets)
// execs as uid 99 with exactly the two effective; without one of them
// in the bounding set it refuses, naming it, and runs nothing.
func TestExec(t *testing.T) {
	if unix.Geteuid() != 0 {
		t.Skip("needs root (the container's start)")
	}
	setpriv, err := exec.LookPath("setpriv")
	if err != nil {
		t.Skip("no setpriv (util-linux)")
	}
	cases := []struct {
		name, bounding string
		want           []string // lines of the status, or the error
		fails          bool
	}{
		{"kept", "-all,+net_admin,+net_raw,+setuid,+setgid",
			[]string{"Uid:\t99\t99\t99\t99", "Gid:\t99\t99\t99\t99", "Groups:\t99", "CapEff:\t0000000000003000", "CapPrm:\t0000000000003000", "CapAmb:\t0000000000003000", "NoNewPrivs:\t1"}, false},
		{"one not held", "-all,+net_admin,+setuid,+setgid", []string{"1 of the 2 capabilities to keep are not held"}, true},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			cmd := exec.Command(setpriv, "--bounding-set="+tc.bounding, "--inh-caps=-all", "--no-new-privs", os.Args[0])
			cmd.Env = append(os.Environ(), "HKS_RUNAS_HELPER=1")
			out, err := cmd.CombinedOutput()
			if tc.fails != (err != nil) {
				t.Fatalf("error %v, want failure %v:\n%s", err, tc.fails, out)
			}
			lines := map[string]bool{}
			for _, l := range strings.Split(string(out), "\n") {
				lines[strings.TrimSpace(l)] = true
			}
			for _, w := range tc.want {
				if !lines[w] && !(tc.fails && strings.Contains(string(out), w)) {
					t.Errorf("no %q in:\n%s", w, out)
				}
			}
		})
	}
}
