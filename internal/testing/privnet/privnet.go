// Package privnet keeps a test binary out of the host's network
// namespace. Some tests reach code that sets the kernel up where it runs
// (run's --listeners=auto probe leaves the TPROXY table and policy route
// in place for the controller it starts, by design): hack/test.sh runs
// every test binary under hack/netns-exec.sh, but a `go test` by hand
// would run them in the host's namespace and leave that table and rule
// on the host. Main re-runs the binary in a namespace of its own, only
// its loopback up, unless it already runs in one (hack/netns-exec.sh
// says so in HKS_PRIVATE_NETNS) or cannot make one (not root: then
// nothing it runs can change the kernel either).
package privnet

import (
	"fmt"
	"os"
	"os/exec"
	"testing"
)

// Env is set to 1 in a process that runs in a network namespace of its
// own (hack/netns-exec.sh, Main's child).
const Env = "HKS_PRIVATE_NETNS"

// Main is a package's TestMain: m.Run in a private network namespace.
func Main(m *testing.M) {
	if os.Getenv(Env) == "1" || os.Geteuid() != 0 {
		os.Exit(m.Run())
	}
	self, err := os.Executable()
	if err != nil {
		fmt.Fprintln(os.Stderr, "privnet:", err)
		os.Exit(2)
	}
	args := append([]string{"--net", "--", "sh", "-c", `ip link set lo up && exec "$0" "$@"`, self}, os.Args[1:]...)
	cmd := exec.Command("unshare", args...)
	cmd.Stdin, cmd.Stdout, cmd.Stderr = os.Stdin, os.Stdout, os.Stderr
	cmd.Env = append(os.Environ(), Env+"=1")
	if err := cmd.Run(); err != nil {
		if ee, ok := err.(*exec.ExitError); ok {
			os.Exit(ee.ExitCode())
		}
		fmt.Fprintln(os.Stderr, "privnet: unshare --net:", err)
		os.Exit(2)
	}
	os.Exit(0)
}

// Check fails t when it runs as root with an interface besides the
// loopback: in the host's namespace, not one of its own.
func Check(t testing.TB, names []string) {
	t.Helper()
	if os.Geteuid() != 0 {
		t.Skip("not root: no namespace of its own, and nothing to protect")
	}
	if os.Getenv(Env) != "1" {
		t.Errorf("%s unset: not run through privnet.Main or hack/netns-exec.sh", Env)
	}
	for _, n := range names {
		if n != "lo" {
			t.Errorf("interface %s seen: the tests run in a namespace that is not their own", n)
		}
	}
}
