// Package conformance runs the upstream Gateway API conformance suite
// (sigs.k8s.io/gateway-api/conformance, in-process) against
// `run --mode=gateway` on the real-node tier (internal/testing/nodes):
// profiles GATEWAY-TCP, GATEWAY-UDP, GATEWAY-TLS, GATEWAY-HTTP and GATEWAY-GRPC, provisional tests
// included, with the images its manifests name built locally
// (hack/testbin.sh: conformance-images.tar). See docs/conformance/.
package conformance

import (
	"errors"
	"fmt"
	"os"
	"os/exec"
	"syscall"
	"testing"
)

// inNetNS marks the process re-executed in a network namespace of its own.
const inNetNS = "HKS_CONFORMANCE_IN_NETNS"

// TestMain runs the tests in a new network namespace (the test binary
// re-executed with CLONE_NEWNET, nothing else unshared): the suite dials
// the Gateways' addresses from the test process with plain sockets, and
// that namespace is joined to the tier's underlay (nodes.LinkCaller)
// without touching the machine's own. It goes with the process.
func TestMain(m *testing.M) {
	if os.Getenv(inNetNS) != "" {
		if out, err := exec.Command("ip", "link", "set", "lo", "up").CombinedOutput(); err != nil {
			fmt.Fprintf(os.Stderr, "conformance: lo up: %v: %s\n", err, out)
			os.Exit(1)
		}
		os.Exit(m.Run())
	}
	exe, err := os.Executable()
	if err != nil {
		fmt.Fprintln(os.Stderr, "conformance:", err)
		os.Exit(1)
	}
	cmd := exec.Command(exe, os.Args[1:]...)
	cmd.Stdin, cmd.Stdout, cmd.Stderr = os.Stdin, os.Stdout, os.Stderr
	cmd.Env = append(os.Environ(), inNetNS+"=1")
	cmd.SysProcAttr = &syscall.SysProcAttr{Unshareflags: syscall.CLONE_NEWNET, Pdeathsig: syscall.SIGKILL}
	err = cmd.Run()
	var exit *exec.ExitError
	switch {
	case errors.As(err, &exit):
		os.Exit(exit.ExitCode())
	case err != nil:
		fmt.Fprintf(os.Stderr, "conformance: a network namespace of its own (root needed): %v\n", err)
		os.Exit(1)
	}
}
