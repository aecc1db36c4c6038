package e2e

import (
	"bytes"
	"flag"
	"fmt"
	"io"
	"math/rand/v2"
	"os"
	"os/exec"
	"strings"
	"sync"
	"testing"

	"github.com/haproxy-k8s-sync/haproxy-k8s-sync/internal/testing/kubeapi"
	"github.com/haproxy-k8s-sync/haproxy-k8s-sync/internal/testing/privnet"
)

// envNetns is set in a test binary re-run inside a network namespace.
const envNetns = "HKS_E2E_NETNS"

// inNetns runs the calling test again, alone, in a network namespace it
// creates (loopback up, an interface of its own holding addrs, /24 each), and
// reports false: the caller returns and the outcome is that run's. Inside
// the namespace it reports true and the test does its work there, so
// every address it uses, 192.0.2.0/24 included, is its own and no packet
// reaches the host's interfaces. Needs root and ip(8); skips without.
//
// A process that has a network namespace to itself already (run by
// hack/netns-exec.sh: privnet.Env) runs the test in it instead, set up
// as a new one would be and cleaned after the test (privateNetns): the
// tests of such a process run one after the other there and share its
// apiserver (kubeapi.Shared), which a namespace made per test could not
// reach.
func inNetns(t testing.TB, addrs ...string) bool {
	t.Helper()
	if os.Getenv(envNetns) != "" {
		return true
	}
	if os.Getenv(privnet.Env) == "1" {
		privateNetns(t, addrs...)
		return true
	}
	if os.Geteuid() != 0 {
		t.Skip("needs root to create a network namespace")
	}
	if _, err := exec.LookPath("ip"); err != nil {
		t.Skip("needs ip(8) (iproute2)")
	}
	// The binaries are found (or built) once, out here.
	bins, err := kubeapi.BinDir()
	if err != nil {
		t.Fatal(err)
	}
	name := fmt.Sprintf("hks-e2e-%d-%d", os.Getpid(), rand.IntN(1_000_000))
	ip := func(args ...string) {
		t.Helper()
		if out, err := exec.Command("ip", args...).CombinedOutput(); err != nil {
			t.Fatalf("ip %s: %v: %s", strings.Join(args, " "), err, out)
		}
	}
	ip("netns", "add", name)
	t.Cleanup(func() { _ = exec.Command("ip", "netns", "del", name).Run() })
	ip("-n", name, "link", "set", "lo", "up")
	if err := setUpHKS0(name); err != nil {
		t.Fatal(err)
	}
	for _, a := range addrs {
		ip("-n", name, "addr", "add", a+"/24", "dev", "hks0")
	}
	args := []string{"netns", "exec", name, os.Args[0], "-test.run", "^" + t.Name() + "$", "-test.v", "-test.timeout", "10m"}
	if _, ok := t.(*testing.B); ok {
		// A benchmark's own run takes the outer -timeout (a large one
		// may need more than 10 minutes to create its objects).
		timeout := "10m"
		if f := flag.Lookup("test.timeout"); f != nil && f.Value.String() != "0s" {
			timeout = f.Value.String()
		}
		args = []string{"netns", "exec", name, os.Args[0], "-test.run", "^$", "-test.bench", "^" + t.Name() + "$", "-test.benchtime", "1x", "-test.v", "-test.timeout", timeout}
	}
	cmd := exec.Command("ip", args...)
	cmd.Env = append(os.Environ(), envNetns+"="+name, kubeapi.EnvBinDir+"="+bins)
	// Indented, so the inner run's "--- PASS" lines are not read as the
	// outer test's by go test -json.
	out := &indent{w: os.Stdout}
	cmd.Stdout, cmd.Stderr = out, out
	err = cmd.Run()
	out.flush()
	if err != nil {
		t.Fatalf("%s in network namespace %s: %v", t.Name(), name, err)
	}
	return false
}

// indent writes each line with a leading "    netns| ".
type indent struct {
	mu  sync.Mutex
	w   io.Writer
	buf []byte
}

func (i *indent) Write(p []byte) (int, error) {
	i.mu.Lock()
	defer i.mu.Unlock()
	i.buf = append(i.buf, p...)
	for {
		n := bytes.IndexByte(i.buf, '\n')
		if n < 0 {
			return len(p), nil
		}
		fmt.Fprintf(i.w, "    netns| %s\n", i.buf[:n])
		i.buf = i.buf[n+1:]
	}
}

func (i *indent) flush() {
	i.mu.Lock()
	defer i.mu.Unlock()
	if len(i.buf) > 0 {
		fmt.Fprintf(i.w, "    netns| %s\n", i.buf)
		i.buf = nil
	}
}
