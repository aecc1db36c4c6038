package e2e

import (
	"fmt"
	"os/exec"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/haproxy-k8s-sync/haproxy-k8s-sync/internal/driver/tproxy"
)

// The tests of a process that has a network namespace to itself run one
// after the other in it (inNetns). The namespace gets what inNetns gives
// a new one: the interface hks0 (once) holding the tproxy mode's service
// address (for good) and the test's addresses (until its end). And after
// each test what its controllers leave there by design when they exit
// (the TPROXY table and its policy routing stay for the HAProxy that
// serves on) is removed: the next test starts from the namespace the
// first one had.
var private struct {
	once sync.Once
	err  error
	mu   sync.Mutex
	// tests (and subtests) that hold the namespace: the addresses each
	// added, removed with the controllers' table when it ends.
	added map[testing.TB][]string
}

// privateNetns sets the process's namespace up for t (inNetns).
func privateNetns(t testing.TB, addrs ...string) {
	t.Helper()
	private.once.Do(func() { private.err = setUpHKS0("") })
	if private.err != nil {
		t.Fatalf("the process's network namespace: %v", private.err)
	}
	private.mu.Lock()
	defer private.mu.Unlock()
	if private.added == nil {
		private.added = map[testing.TB][]string{}
	}
	mine, held := private.added[t]
	for _, a := range addrs {
		// EEXIST: the namespace holds it already (an earlier call).
		if exec.Command("ip", "addr", "add", a+"/24", "dev", "hks0").Run() == nil {
			mine = append(mine, a)
		}
	}
	private.added[t] = mine
	if held {
		return
	}
	// Registered before the test's env, so it runs after its controllers
	// and HAProxy stopped.
	t.Cleanup(func() {
		private.mu.Lock()
		mine := private.added[t]
		delete(private.added, t)
		private.mu.Unlock()
		if err := tproxy.Cleanup("", tproxy.Options{}); err != nil {
			t.Errorf("removing the TPROXY table and policy routing after the test: %v", err)
		}
		// The last first: deleting a subnet's primary address deletes
		// its secondaries with it.
		for _, a := range slices.Backward(mine) {
			if out, err := exec.Command("ip", "addr", "del", a+"/24", "dev", "hks0").CombinedOutput(); err != nil {
				t.Errorf("ip addr del %s: %v: %s", a, err, out)
			}
		}
	})
}

// setUpHKS0 gives the namespace name ("" the current one) the interface
// hks0, up, holding the tproxy mode's service address in that mode: a
// dummy interface where the kernel has the module, else a veth pair with
// both ends in the namespace (the module is often built in).
func setUpHKS0(name string) error {
	ip := func(args ...string) error {
		if name != "" {
			args = append([]string{"-n", name}, args...)
		}
		if out, err := exec.Command("ip", args...).CombinedOutput(); err != nil {
			return fmt.Errorf("ip %s: %v: %s", strings.Join(args, " "), err, out)
		}
		return nil
	}
	if ip("link", "add", "hks0", "type", "dummy") != nil {
		if err := ip("link", "add", "hks0", "type", "veth", "peer", "name", "hks1"); err != nil {
			return err
		}
		if err := ip("link", "set", "hks1", "up"); err != nil {
			return err
		}
	}
	if err := ip("link", "set", "hks0", "up"); err != nil {
		return err
	}
	if tproxyMode() {
		return ip("addr", "add", tproxyVIP+"/32", "dev", "hks0")
	}
	return nil
}
