package e2e

import (
	"fmt"
	"net"
	"net/netip"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/haproxy-k8s-sync/haproxy-k8s-sync/internal/render"
	"github.com/haproxy-k8s-sync/haproxy-k8s-sync/internal/spares"
	"github.com/haproxy-k8s-sync/haproxy-k8s-sync/internal/testing/nodes"
)

// envListeners is the suite's listener mode (HKS_E2E_LISTENERS):
// "tproxy", "ports", or unset (or "auto"): tproxy wherever the suite can
// set it up (root and ip(8), what inNetns needs), as run's default
// --listeners=auto is tproxy wherever the controller can (suiteTProxy).
// make test runs the whole suite so and a core again with "ports"
// (PORTS_E2E in the Makefile, docs/testing.md "The listener mode").
// In tproxy mode every controller of the suite runs with
// --listeners=tproxy and a backend pool
// (--backend-pool=HKS_E2E_BACKEND_POOL, 4 when that is unset), its
// Services on tproxyVIP instead of loopback (which the fixed listener
// never captures: render.ListenerAddrOK), and HAProxy's first config
// from `init --listeners=tproxy`. The TPROXY table and policy routing the
// controller sets up must never touch the host's, so in this mode every
// test runs in a network namespace of its own (inNetns: a test that does
// not ask for one re-runs itself in one from newEnv, and its outer run
// reports SKIP with the inner run's outcome in its "netns|" lines, FAIL
// when it failed). Controllers beside the Data Plane API driver, with
// --instance or in the apiserver mode have no tproxy mode and keep their
// flags, as does a test's controller started with --listeners=ports (a
// test of per-port binds). The real-node and chaos tiers run tproxy mode
// unless it is "ports", the TPROXY side in their load balancer's
// namespace (realNodeListening).
const envListeners = "HKS_E2E_LISTENERS"

// envHTTPListener: with tproxy mode, init and every controller that takes
// it have the fixed HTTP listener (the plain HTTP frontends, Gateway
// HTTP listeners and Ingresses' HTTP, behind it: docs/listeners.md), as
// run has by default; HKS_E2E_HTTP_LISTENER=0 runs them with
// --http-listener=false instead (frontends of their own).
const envHTTPListener = "HKS_E2E_HTTP_LISTENER"

// tproxyVIP is the Services' address in tproxy mode: a documentation
// address held by the test's own namespace (inNetns adds it), so that
// the frontends that keep their own binds (Gateway routes, TLS) can bind
// it, and the ones behind the listener are captured by the kernel's
// TPROXY rule before any socket sees them.
const tproxyVIP = "203.0.113.10"

// listening is how one env's HAProxy and controllers take TCP
// connections, and so where its clients reach Services: the one place
// the suite decides it (init's flags, every controller's listener, pool
// and bind flags, the Services' address, what stands for a Service's
// frontend on disk). The Services, gateway and apiserver tests take the
// suite's mode (suiteListening); the real-node and chaos tiers, whose
// load balancer has a network namespace of its own, run tproxy mode there
// with a pool unless told otherwise (realNodeListening).
type listening struct {
	tproxy bool
	// http is --http-listener (tproxy only).
	http bool
	// netns is --listener-netns: the namespace of the TPROXY table and
	// policy routing ("": the controller's own, the test's namespace).
	netns string
}

// suiteListening is the mode of HKS_E2E_LISTENERS (suiteTProxy).
func suiteListening() listening {
	tp := suiteTProxy()
	return listening{tproxy: tp, http: tp && httpListenerOn()}
}

// suiteTProxy reports whether the suite runs in tproxy mode: as
// HKS_E2E_LISTENERS says, else (unset or "auto") where a test can have a
// network namespace of its own (root and ip(8)): without them a test in
// tproxy mode could only skip (inNetns), so the suite runs per-port
// frontends on the host's loopback instead.
func suiteTProxy() bool {
	switch os.Getenv(envListeners) {
	case render.ListenersTProxy:
		return true
	case render.ListenersPorts:
		return false
	case "", "auto":
		return netnsCapable()
	}
	panic(fmt.Sprintf("%s=%q: tproxy, ports or auto (unset)", envListeners, os.Getenv(envListeners)))
}

// netnsCapable reports whether inNetns can make a network namespace.
func netnsCapable() bool {
	if os.Geteuid() != 0 {
		return false
	}
	_, err := exec.LookPath("ip")
	return err == nil
}

// realNodeListening is the real-node and chaos tiers' mode: tproxy with
// a pool, the kernel's side in the load balancer's namespace lbNS (where
// HAProxy runs), unless HKS_E2E_LISTENERS=ports.
func realNodeListening(lbNS string) listening {
	tp := os.Getenv(envListeners) != render.ListenersPorts
	return listening{tproxy: tp, http: tp && httpListenerOn(), netns: nodes.NSPath(lbNS)}
}

// httpListenerOn is envHTTPListener: on unless it is "0".
func httpListenerOn() bool { return os.Getenv(envHTTPListener) != "0" }

// tproxyMode reports whether the suite runs in tproxy mode (for the
// decisions taken before a test has an env).
func tproxyMode() bool { return suiteListening().tproxy }

// serviceIP is where the suite's clients reach Services and Gateways.
func serviceIP() string { return suiteListening().serviceIP() }

// serviceIP is where the env's clients reach Services.
func (l listening) serviceIP() string {
	if l.tproxy {
		return tproxyVIP
	}
	return "127.0.0.1"
}

// boundIP is where a controller with extra flags serves: serviceIP
// when it takes tproxy mode, else its --bind-address, 127.0.0.1 (args).
func (l listening) boundIP(extra []string) string {
	if l.capable(extra) {
		return tproxyVIP
	}
	return "127.0.0.1"
}

// capable reports whether a controller with these flags can run in
// tproxy mode.
func (l listening) capable(extra []string) bool {
	return l.tproxy && !slices.ContainsFunc(extra, func(a string) bool {
		return strings.HasPrefix(a, "--dataplane") || strings.HasPrefix(a, "--instance") || a == "--mode=apiserver" || a == "--listeners=ports"
	})
}

// args are the listener flags of a controller with extra flags (a test's
// own flags follow, and win): --bind-address, and in tproxy mode
// --listeners=tproxy, a pool (unless the suite or the test sizes one)
// and the namespace of the kernel's side. The bind address is one only:
// a frontend behind the fixed listener must have every bind on an
// address the listener keys (render.Options.Listened).
func (l listening) args(extra []string) []string {
	if !l.capable(extra) {
		args := []string{"--bind-address", "127.0.0.1"}
		// --listeners=auto, the default, would set TPROXY up wherever it
		// can: ports mode says so, for a controller that has the flag
		// (the Data Plane API driver and --instance do not probe).
		if !slices.ContainsFunc(extra, func(a string) bool {
			return strings.HasPrefix(a, "--dataplane") || strings.HasPrefix(a, "--instance") || strings.HasPrefix(a, "--listeners")
		}) {
			args = append(args, "--listeners=ports")
		}
		return args
	}
	args := []string{"--bind-address", tproxyVIP, "--listeners=tproxy"}
	if len(poolArgs(extra)) == 0 && !slices.ContainsFunc(extra, func(a string) bool { return strings.HasPrefix(a, "--backend-pool") }) {
		args = append(args, "--backend-pool=4")
	}
	if l.netns != "" {
		args = append(args, "--listener-netns", l.netns)
	}
	if !slices.ContainsFunc(extra, isHTTPListenerFlag) {
		args = append(args, l.httpListenerArg())
	}
	return args
}

// isHTTPListenerFlag reports whether a is --http-listener[=bool] (a
// test's own choice, which the suite's then leaves alone).
func isHTTPListenerFlag(a string) bool {
	return a == "--http-listener" || strings.HasPrefix(a, "--http-listener=")
}

// httpListenerArg is --http-listener=true or false: the mode said
// whatever run's default.
func (l listening) httpListenerArg() string { return "--http-listener=" + strconv.FormatBool(l.http) }

// initArgs are init's flags for the mode.
func (l listening) initArgs() []string {
	if l.tproxy {
		return []string{"--listeners", "tproxy", l.httpListenerArg()}
	}
	return nil
}

// serviceAddr is host:port of the env's Services' port.
func (e *env) serviceAddr(port int32) string {
	return net.JoinHostPort(e.listen.serviceIP(), strconv.Itoa(int(port)))
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

// pooledBackend is haproxyBackend(name) once the pool file names it:
// pool.json is written after the pass that served the backend
// (runtimeapi/duefiles.go), so a test that has just seen it served waits
// for the file. name itself when the config has a backend of that name
// (no pool).
func (e *env) pooledBackend(name string) string {
	be := name
	e.eventually("the pool file names "+name, func() error {
		if be = e.haproxyBackend(name); be != name || strings.Contains(e.config(), "\nbackend "+name+"\n") {
			return nil
		}
		return fmt.Errorf("neither a spare nor a backend of its own for %s", name)
	})
	return be
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
	if !e.listen.tproxy {
		return
	}
	b, err := os.ReadFile(render.ListenerMapFile(filepath.Join(filepath.Dir(e.cfgPath), "acl")))
	if err != nil {
		e.t.Logf("tproxy mode: no listener map: %v", err)
		return
	}
	e.t.Logf("tproxy mode: the listener map held %d keys", strings.Count(string(b), "\n"))
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
	if !e.listen.tproxy {
		return contains(e.config(), "frontend "+fe)
	}
	return e.listenerMapsTo(tproxyVIP, port, "")
}

// listenerRoutesHave is nil when the fixed listener's routes map (tproxy
// mode: a gateway TCP listener behind it, render.ListenedTCPRoutes) has
// the key of addr and port.
func (e *env) listenerRoutesHave(addr string, port int32) error {
	b, err := os.ReadFile(render.ListenerRoutesMapFile(filepath.Join(filepath.Dir(e.cfgPath), "acl")))
	if err != nil {
		return err
	}
	return contains(string(b), render.ListenerKey(netip.MustParseAddr(addr), uint16(port))+" ")
}

// listenerTLSHas is nil when the fixed listener's map of the keys that
// wait for a ClientHello (a gateway TLS passthrough listener,
// render.ListenedTLSRoutes) has the key of addr and port.
func (e *env) listenerTLSHas(addr string, port int32) error {
	b, err := os.ReadFile(render.ListenerTLSMapFile(filepath.Join(filepath.Dir(e.cfgPath), "acl")))
	if err != nil {
		return err
	}
	return contains(string(b), render.ListenerKey(netip.MustParseAddr(addr), uint16(port))+" ")
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

// instanceServes is serves for a controller with --instance, which has no
// tproxy mode (listening.capable): its frontends bind 127.0.0.1 in every
// suite mode, not the Services' address of tproxy mode.
func instanceServes(port int32, want ...string) func() error {
	return servesOnAddr("127.0.0.1", port, want...)
}

// logDisk logs, when the test failed, what a HAProxy restarted from disk
// reads for the Service on port (its backend's servers in the config,
// the state file, the listener map) and the last controller's log.
func (e *env) logDisk(port int32) {
	if !e.t.Failed() {
		return
	}
	acl := filepath.Join(filepath.Dir(e.cfgPath), "acl")
	for _, f := range []string{e.cfgPath, filepath.Join(e.dir, "state"), render.ListenerMapFile(acl), spares.FileBeside(e.cfgPath)} {
		b, err := os.ReadFile(f)
		var lines []string
		for _, l := range strings.Split(string(b), "\n") {
			if strings.Contains(l, "server ") || strings.Contains(l, "backend ") || !strings.HasSuffix(f, ".cfg") {
				lines = append(lines, l)
			}
		}
		e.t.Logf("%s (%v):\n%s", f, err, tail(strings.Join(lines, "\n"), 80))
	}
	if e.ctlLog != nil {
		e.t.Logf("last controller log:\n%s", tail(e.ctlLog.String(), 80))
	}
}
