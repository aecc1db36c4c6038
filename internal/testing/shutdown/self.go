package shutdown

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// EnvMain names the program a test binary runs in place of its tests
// (Main). A test that runs its package's own program (the demo, the
// benchmark) or the controller starts the test binary itself through
// Self rather than building the program: go build links it again on
// every run (~13 CPU-s a link on the 2-core machine, five in a make
// test), where hack/test.sh links a test binary once per change.
const EnvMain = "HKS_TEST_MAIN"

// Main is the TestMain of such a package: with EnvMain set to a name of
// mains the binary runs that program, its arguments in os.Args, and exits
// 0 when it returns (a program exits itself to say more); without it, the
// tests. EnvMain stays in the environment: a program that runs itself
// again (os.Executable) runs the same program. m is the *testing.M, or
// what wraps its Run (kubeapi.Shared).
func Main(m interface{ Run() int }, mains map[string]func()) {
	name, ok := os.LookupEnv(EnvMain)
	if !ok {
		os.Exit(m.Run())
	}
	run := mains[name]
	if run == nil {
		fmt.Fprintf(os.Stderr, "%s=%q: not a program of this test binary\n", EnvMain, name)
		os.Exit(2)
	}
	run()
	os.Exit(0)
}

// Self is an executable, in a directory of t's, that runs this test
// binary as its program name (Main) with the arguments it is given: for a
// command line, or for a program that is given a binary to run (the
// benchmark's -controller-bin).
func Self(t testing.TB, name string) string {
	t.Helper()
	self, err := os.Executable()
	if err != nil {
		t.Fatalf("the test binary: %v", err)
	}
	path := filepath.Join(t.TempDir(), name)
	script := fmt.Sprintf("#!/bin/sh\n%s=%s exec %s \"$@\"\n", EnvMain, quote(name), quote(self))
	if err := os.WriteFile(path, []byte(script), 0o755); err != nil {
		t.Fatal(err)
	}
	return path
}

// quote is s as one word of sh.
func quote(s string) string { return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'" }
