package e2e

import (
	"net/netip"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/haproxy-k8s-sync/haproxy-k8s-sync/internal/render"
	"github.com/haproxy-k8s-sync/haproxy-k8s-sync/internal/spares"
)

// envListeners, when "tproxy" (HKS_E2E_LISTENERS=tproxy), runs every
// controller of the suite with --listeners=tproxy and a backend pool
// (--backend-pool=HKS_E2E_BACKEND_POOL, 4 when that is unset), its
// Services on tproxyVIP instead of loopback (which the fixed listener
// never captures: render.ListenerAddrOK), and HAProxy's first config
// from `init --listeners=tproxy`: the suite in the mode issue 29 wants as
// the default. The TPROXY table and policy routing the controller sets up
// must never touch the host's, so in this mode every test runs in a
// network namespace of its own (inNetns: a test that does not ask for one
// re-runs itself in one from newEnv, and its outer run reports SKIP with
// the inner run's outcome in its "netns|" lines, FAIL when it failed).
// Controllers beside the Data Plane API driver, with --instance or in
// the apiserver mode have no tproxy mode and keep their flags, as does a
// test's controller started with --listeners=ports (a test of per-port
// binds).
const envListeners = "HKS_E2E_LISTENERS"

// tproxyVIP is the Services' address in tproxy mode: a documentation
// address held by the test's own namespace (inNetns adds it), so that
// the frontends that keep their own binds (Gateway routes, TLS) can bind
// it, and the ones behind the listener are captured by the kernel's
// TPROXY rule before any socket sees them.
const tproxyVIP = "203.0.113.10"

// tproxyMode reports whether the suite runs in tproxy mode.
func tproxyMode() bool { return os.Getenv(envListeners) == "tproxy" }

// serviceIP is where the suite's clients reach Services and Gateways.
func serviceIP() string {
	if tproxyMode() {
		return tproxyVIP
	}
	return "127.0.0.1"
}

// tproxyCapable reports whether a controller with these flags can run in
// tproxy mode.
func tproxyCapable(extra []string) bool {
	return tproxyMode() && !slices.ContainsFunc(extra, func(a string) bool {
		return strings.HasPrefix(a, "--dataplane") || strings.HasPrefix(a, "--instance") || a == "--mode=apiserver" || a == "--listeners=ports"
	})
}

// listenerArgs are the flags of tproxy mode for a controller with extra
// flags (a test's own flags follow, and win).
func listenerArgs(extra []string) []string {
	if !tproxyCapable(extra) {
		return nil
	}
	var args []string
	if len(poolArgs(extra)) == 0 {
		args = append(args, "--backend-pool=4")
	}
	return append(args, "--listeners=tproxy")
}

// bindAddress is the --bind-address of every test controller (a test's
// own flags may add others): tproxyVIP in tproxy mode, else loopback.
// Only one: a frontend behind the fixed listener must have every bind on
// an address the listener keys (render.Options.Listened).
func bindAddress(extra []string) string {
	if tproxyCapable(extra) {
		return tproxyVIP
	}
	return "127.0.0.1"
}

// inTProxyNetns is newEnv's part in tproxy mode: it reports true when the
// test may go on (not tproxy mode, or already in a namespace of its own);
// else it has run the test again in one, and the caller stops (SKIP: the
// inner run passed; it failed the test otherwise).
func inTProxyNetns(t testing.TB) bool {
	t.Helper()
	if !tproxyMode() || os.Getenv(envNetns) != "" {
		return true
	}
	if inNetns(t) {
		return true
	}
	t.Skipf("%s=tproxy: ran in a network namespace of its own (its outcome in the netns| lines above)", envListeners)
	return false
}

// haproxyBackend is the HAProxy backend that serves the model backend
// name as the controller last wrote its pool (pool.json beside the
// config): the spare it occupies with a pool (HKS_E2E_BACKEND_POOL,
// tproxy mode), name itself without one.
func (e *env) haproxyBackend(name string) string {
	f, err := os.Open(spares.FileBeside(e.cfgPath))
	if err != nil {
		return name
	}
	defer f.Close()
	s, err := spares.Decode(f)
	if err != nil {
		e.t.Fatalf("pool file: %v", err)
	}
	return s.HAProxyBackend(name)
}

// occupiedSpares are the spares of the pool that serve a model backend,
// as the controller last wrote its pool (none without one): the HAProxy
// backends of Services besides those named be_.
func (e *env) occupiedSpares() map[string]bool {
	f, err := os.Open(spares.FileBeside(e.cfgPath))
	if err != nil {
		return nil
	}
	defer f.Close()
	s, err := spares.Decode(f)
	if err != nil {
		e.t.Fatalf("pool file: %v", err)
	}
	out := map[string]bool{}
	for _, sp := range s.Spares {
		if sp.Occupant != "" {
			out[sp.Name] = true
		}
	}
	return out
}

// logListenerMap logs how many keys the fixed listener's map held when
// the controller stopped (tproxy mode): a run whose Services all kept
// frontends of their own (a loopback bind, a route) says 0, so that a
// run of the suite in this mode shows what went through the listener.
func (e *env) logListenerMap() {
	if !tproxyMode() {
		return
	}
	b, err := os.ReadFile(render.ListenerMapFile(filepath.Join(filepath.Dir(e.cfgPath), "acl")))
	if err != nil {
		e.t.Logf("%s=tproxy: no listener map: %v", envListeners, err)
		return
	}
	e.t.Logf("%s=tproxy: the listener map held %d keys", envListeners, strings.Count(string(b), "\n"))
}

// portsOnly skips a test of what only per-port frontends do (a bind that
// another process's port can refuse) in tproxy mode, where no Service
// binds a port: the fixed listener's own tests cover that mode
// (TestTProxyListeners, internal/driver/tproxy).
func portsOnly(t *testing.T) {
	t.Helper()
	if tproxyMode() {
		t.Skipf("%s=tproxy: per-port frontends only (no Service binds a port behind the fixed listener)", envListeners)
	}
}

// serviceFrontend is nil when the Service frontend fe (its name, for
// port) is in HAProxy's files: its own frontend in ports mode, its key
// in the fixed listener's map in tproxy mode.
func (e *env) serviceFrontend(fe string, port int32) error {
	if !tproxyMode() {
		return contains(e.config(), "frontend "+fe)
	}
	return e.listenerMapsTo(tproxyVIP, port, "")
}

// listenerMapsTo is nil when the fixed listener's map (tproxy mode) has
// the key of addr and port, naming the HAProxy backend that serves the
// model backend be (env.haproxyBackend) unless be is "".
func (e *env) listenerMapsTo(addr string, port int32, be string) error {
	b, err := os.ReadFile(render.ListenerMapFile(filepath.Join(filepath.Dir(e.cfgPath), "acl")))
	if err != nil {
		return err
	}
	entry := render.ListenerKey(netip.MustParseAddr(addr), uint16(port)) + " "
	if be != "" {
		entry += e.haproxyBackend(be) + "\n"
	}
	return contains(string(b), entry)
}
