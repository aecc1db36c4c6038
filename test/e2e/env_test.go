// Package e2e runs haproxy-k8s-sync against a real kube-apiserver + etcd and
// a real HAProxy in master-worker mode, with loopback addresses standing in
// for nodes, and sends real traffic through it.
package e2e

import (
	"context"
	"fmt"
	"math/rand/v2"
	"net"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strconv"
	"strings"
	"testing"
	"time"

	authenticationv1 "k8s.io/api/authentication/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"sigs.k8s.io/yaml"

	"github.com/haproxy-k8s-sync/haproxy-k8s-sync/internal/cli"
	"github.com/haproxy-k8s-sync/haproxy-k8s-sync/internal/haproxy"
	"github.com/haproxy-k8s-sync/haproxy-k8s-sync/internal/haproxy/haproxytest"
	"github.com/haproxy-k8s-sync/haproxy-k8s-sync/internal/testing/kubeapi"
	"github.com/haproxy-k8s-sync/haproxy-k8s-sync/internal/testing/lab"
)

const (
	converge = 20 * time.Second // deadline for every eventually
	ns       = "default"
)

type env struct {
	t       *testing.T
	kube    *kubeapi.Server
	client  kubernetes.Interface
	hap     *haproxytest.Process
	master  *haproxy.Master
	runtime *haproxy.Runtime
	dir     string
	cfgPath string
	subnet  int // nodes live at 127.<subnet>.0.x
	nodes   map[string]*lab.NodeServer
	// health: each node's stand-in for kube-proxy's /healthz on
	// kubeProxyHealthPort, which the default --node-check checks.
	health map[string]*lab.HealthServer

	ctlCancel context.CancelFunc
	ctlDone   chan error
	ctlLog    *haproxytest.LockedBuffer
	ctlArgs   []string

	listen listening // how HAProxy takes TCP connections (listenersmode_test.go)
	// localCheckDefault: the test's stand-ins answer the healthCheckNodePort
	// too, and its controllers run the default --local-check (localCheck).
	localCheckDefault bool
}

// newEnv starts the apiserver and an HAProxy that runs the config `init`
// writes. The controller is started separately.
func newEnv(t *testing.T) *env {
	t.Helper()
	inTProxyNetns(t)
	return newEnvOn(t, kubeapi.Start(t))
}

// initHAProxy runs `init` for an HAProxy whose files are in dir (the
// config, haproxytest's stats socket, the state file "state") and returns
// the config's path.
func initHAProxy(t testing.TB, dir string) string {
	t.Helper()
	return initHAProxyFor(t, dir, suiteListening())
}

// initHAProxyFor is initHAProxy for an env listening as l.
func initHAProxyFor(t testing.TB, dir string, l listening) string {
	t.Helper()
	cfg := filepath.Join(dir, "haproxy.cfg")
	args := append([]string{"haproxy-k8s-sync", "init", "--haproxy-config", cfg,
		"--stats-socket", haproxytest.StatsSocketPath(dir), "--state-file", filepath.Join(dir, "state")}, l.initArgs()...)
	if code := cli.Main(args, nil, os.Stdout, os.Stderr); code != 0 {
		t.Fatalf("init exited %d", code)
	}
	return cfg
}

// localInstance is the --instance value of the local HAProxy hap whose
// files initHAProxy wrote into dir, named name; opts (key=value) follow.
func localInstance(name, dir string, hap *haproxytest.Process, opts ...string) string {
	return strings.Join(append([]string{"name=" + name, "config=" + filepath.Join(dir, "haproxy.cfg"), "master=" + hap.MasterSocket,
		"stats=" + hap.StatsSocket, "state=" + filepath.Join(dir, "state")}, opts...), ",")
}

// newEnvOn is newEnv on a running apiserver (shared by several envs).
func newEnvOn(t *testing.T, kube *kubeapi.Server) *env {
	t.Helper()
	inTProxyNetns(t)
	return newEnvListening(t, kube, suiteListening())
}

// newEnvListening is newEnvOn listening as l, whatever the suite's mode
// (a test of one mode, in a network namespace of its own for tproxy).
func newEnvListening(t *testing.T, kube *kubeapi.Server, l listening) *env {
	t.Helper()
	e := &env{t: t, kube: kube, dir: t.TempDir(), nodes: map[string]*lab.NodeServer{}, health: map[string]*lab.HealthServer{},
		listen: l}
	e.client = e.kube.Client(t)
	e.subnet = freeSubnet()
	e.cfgPath = initHAProxyFor(t, e.dir, e.listen)
	e.hap = haproxytest.Start(t, e.dir, e.cfgPath)
	e.master = haproxy.NewMaster(e.hap.MasterSocket)
	e.runtime = haproxy.NewRuntime(e.hap.StatsSocket)
	t.Cleanup(func() { e.runtime.Close() })
	return e
}

// controllerArgs are the flags of every test controller; extra ones follow.
func (e *env) controllerArgs(extra ...string) []string {
	return append([]string{
		"--kubeconfig", e.kube.KubeconfigPath,
		"--haproxy-config", e.cfgPath,
		"--haproxy-bin", haproxytest.Bin(),
		"--master-socket", e.hap.MasterSocket,
		"--stats-socket", e.hap.StatsSocket,
		"--state-file", filepath.Join(e.dir, "state"),
		"--default-check-interval", "100ms", "--default-rise", "1", "--default-fall", "1",
		"--resync-period", "3s", "--min-reload-interval", "100ms", "--persist-interval", "50ms",
		"--log-level", "debug",
		"--metrics-address", "", // tests run side by side: one that scrapes passes its own address
		"--udp=off", // the kernel's UDP path only in network namespaces (udp_test.go)
	}, slices.Concat(e.listen.args(extra), e.localCheck(), poolArgs(extra), extra)...)
}

// localCheck is the --local-check of the env's controllers: the stand-in
// nodes (e.health) answer kube-proxy's /healthz only, not a Local
// Service's healthCheckNodePort (the default check of such a Service), so
// there their Local Services follow their node, as before; a test of that
// check says --local-check=health-check-node-port. Real nodes' kube-proxy
// answers both: the default.
func (e *env) localCheck() []string {
	if e.health == nil || e.localCheckDefault {
		return nil
	}
	return []string{"--local-check=service-port"}
}

func (e *env) startController(extra ...string) {
	e.t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	e.ctlCancel, e.ctlDone, e.ctlLog = cancel, make(chan error, 1), &haproxytest.LockedBuffer{}
	args := e.controllerArgs(extra...)
	e.t.Logf("controller args: %s", strings.Join(args, " "))
	go func() { e.ctlDone <- cli.Run(ctx, args, func(string) string { return "" }, e.ctlLog) }()
	e.t.Cleanup(e.stopController)
}

func (e *env) stopController() {
	if e.ctlCancel == nil {
		return
	}
	e.logListenerMap()
	e.ctlCancel()
	select {
	case err := <-e.ctlDone:
		if err != nil && e.t.Failed() {
			e.t.Logf("controller: %v", err)
		}
	case <-time.After(10 * time.Second):
		e.t.Errorf("controller did not stop")
	}
	e.ctlCancel = nil
	if e.t.Failed() {
		e.t.Logf("controller log:\n%s", e.ctlLog.String())
	}
}

// kubeProxyHealthPort is where kube-proxy answers /healthz, which the
// default --node-check checks.
const kubeProxyHealthPort = 10256

// freeSubnet picks a random subnet of 127.100-199.0.0 whose first node
// addresses have kube-proxy's health port free: a benchmark or another
// test's nodes may hold it on theirs.
func freeSubnet() int {
	var s int
	for range 20 {
		s = 100 + rand.IntN(100)
		free := true
		for i := 1; i <= 8 && free; i++ {
			l, err := net.Listen("tcp", fmt.Sprintf("127.%d.0.%d:%d", s, i, kubeProxyHealthPort))
			if err != nil {
				free = false
				continue
			}
			l.Close()
		}
		if free {
			break
		}
	}
	return s
}

// addNode creates a Node at 127.<subnet>.0.<i> listening on ports, with a
// healthy stand-in for kube-proxy's /healthz (e.health[name]), as a real
// node has: the controller's default node check asks it.
func (e *env) addNode(name string, i int, ready bool, ports ...int32) {
	e.t.Helper()
	ip := fmt.Sprintf("127.%d.0.%d", e.subnet, i)
	ns := lab.NewNodeServer(name, ip)
	for _, p := range ports {
		if err := ns.Listen(int(p)); err != nil {
			e.t.Fatalf("node %s: %v", name, err)
		}
	}
	e.nodes[name] = ns
	e.t.Cleanup(ns.Close)
	h, err := lab.NewHealthServer(fmt.Sprintf("%s:%d", ip, kubeProxyHealthPort))
	if err != nil {
		e.t.Fatalf("node %s: kube-proxy /healthz stand-in: %v", name, err)
	}
	e.health[name] = h
	e.t.Cleanup(h.Close)
	if err := lab.CreateNode(context.Background(), e.client, name, ip, ready); err != nil {
		e.t.Fatal(err)
	}
}

// nodePort picks a node port in the static band of the apiserver's
// default range (30000-30085 of 30000-32767), leaving room for the 12
// consecutive ports a test takes from it at most: the apiserver allocates
// the ports nobody names (a Local Service's healthCheckNodePort among them)
// above that band while ports are free there, so a port drawn anywhere in
// the range could be taken already (CI's TestNodeLeavesEveryBackend: its
// eleventh nodePort was a Local Service's healthCheckNodePort).
func nodePort() int32 { return int32(30000 + rand.IntN(64)) }

// eventually polls cond until it returns nil or the deadline passes.
func (e *env) eventually(what string, cond func() error) {
	e.t.Helper()
	eventuallyIn(e.t, what, cond)
}

// eventuallyIn is eventually for test t (a subtest's own, so that its
// failure ends only that subtest).
func eventuallyIn(t testing.TB, what string, cond func() error) {
	t.Helper()
	deadline := time.Now().Add(converge)
	var err error
	for time.Now().Before(deadline) {
		if err = cond(); err == nil {
			return
		}
		time.Sleep(20 * time.Millisecond) // poll interval, not synchronisation
	}
	t.Fatalf("%s: not reached within %s: %v", what, converge, err)
}

// serves reports nil when connections to the frontend on port reach
// exactly the nodes in want.
func serves(port int32, want ...string) func() error { return servesOnAddr(serviceIP(), port, want...) }

// servesOnAddr is serves for connections to addr.
func servesOnAddr(addr string, port int32, want ...string) func() error {
	return func() error {
		seen := map[string]bool{}
		for i := 0; i < 3*len(want)+2; i++ {
			name, err := lab.Probe(net.JoinHostPort(addr, strconv.Itoa(int(port))), time.Second)
			if err != nil {
				if len(want) == 0 {
					return nil
				}
				return err
			}
			seen[name] = true
		}
		got := make([]string, 0, len(seen))
		for n := range seen {
			got = append(got, n)
		}
		sort.Strings(got)
		w := slices.Clone(want)
		sort.Strings(w)
		if !slices.Equal(got, w) {
			return fmt.Errorf("served by %v, want %v", got, w)
		}
		return nil
	}
}

func (e *env) reloads() int {
	e.t.Helper()
	// The master answers nothing while it re-executes for a reload (an
	// empty "show proc", CI 2026-11-29): asked again until it answers,
	// bounded by a deadline.
	deadline := time.Now().Add(10 * time.Second)
	for {
		p, err := e.master.ShowProc(context.Background())
		if err == nil {
			return p.Reloads
		}
		if time.Now().After(deadline) {
			e.t.Fatalf("show proc: %v", err)
		}
		time.Sleep(20 * time.Millisecond) // poll interval
	}
}

// event returns nil once the Service has an Event with reason.
func (e *env) event(svc, reason string) func() error {
	return func() error {
		evs, err := e.client.CoreV1().Events(ns).List(context.Background(), metav1.ListOptions{FieldSelector: "involvedObject.name=" + svc})
		if err != nil {
			return err
		}
		var seen []string
		for _, ev := range evs.Items {
			if ev.Reason == reason && ev.Type == "Warning" {
				return nil
			}
			seen = append(seen, ev.Reason)
		}
		return fmt.Errorf("no %s event on %s (have %v)", reason, svc, seen)
	}
}

func (e *env) config() string {
	b, err := os.ReadFile(e.cfgPath)
	if err != nil {
		e.t.Fatal(err)
	}
	return string(b)
}

// load runs sequential connections through port until stop is closed and
// at least min were made (at most max of them) and reports how many were
// made and how many failed. The minimum keeps a fast change from ending
// the load before it measured anything.
func load(port int32, min, max int, stop <-chan struct{}) (total, failed int, firstErr error) {
	for total < max {
		if total >= min {
			select {
			case <-stop:
				return
			default:
			}
		}
		total++
		if _, err := lab.Probe(fmt.Sprintf("%s:%d", serviceIP(), port), 2*time.Second); err != nil {
			failed++
			if firstErr == nil {
				firstErr = err
			}
		}
	}
	return
}

type loadResult struct {
	total, failed int
	err           error
}

// loadMin is how many connections startLoad's load makes at least, however
// soon it is stopped.
const loadMin = 10

// startLoad runs load through port in the background (loadMin connections
// at least, 50,000 at most) until the function it returns is called; that
// function waits for the minimum and fails the test if any failed.
func (e *env) startLoad(port int32) (stop func() loadResult) {
	stopc := make(chan struct{})
	done := make(chan loadResult)
	go func() {
		tot, f, err := load(port, loadMin, 50000, stopc)
		done <- loadResult{tot, f, err}
	}()
	return func() loadResult {
		close(stopc)
		r := <-done
		if r.failed != 0 || r.total < loadMin {
			e.t.Errorf("load: %d connections, %d failed (first: %v)", r.total, r.failed, r.err)
		}
		return r
	}
}

func contains(s, sub string) error {
	if !strings.Contains(s, sub) {
		return fmt.Errorf("%q not found", sub)
	}
	return nil
}

// withRole is args after the flags that make the controller talk to e's
// apiserver as the ServiceAccount whose token file is token (from
// rbacTokenFile: exactly the shipped role), not through a kubeconfig.
// Its capacity is its length: callers append to it more than once.
func (e *env) withRole(token string, args ...string) []string {
	return slices.Clip(append([]string{"--kubeconfig", "", "--api-server", e.kube.URL, "--token-file", token, "--ca-file", e.kube.CAPath}, args...))
}

// rbacTokenFile applies deploy/services/rbac.yaml (the Services mode) and returns a file holding a token
// of its ServiceAccount, so the controller runs with exactly the
// permissions we ship.
func (e *env) rbacTokenFile() string {
	e.t.Helper()
	return e.rbacTokenFileFrom("../../deploy/services/rbac.yaml")
}

// rbacTokenFileFrom is rbacTokenFile for other shipped RBAC files (the
// ServiceAccount is the first file's).
func (e *env) rbacTokenFileFrom(files ...string) string {
	e.t.Helper()
	return e.rbacTokenFileAs("", files...)
}

// rbacTokenFileAs is rbacTokenFileFrom with the ServiceAccount named sa
// ("": as shipped), in the files' ServiceAccount and bindings alike: two
// controllers on one apiserver (the Services and the gateway modes) each
// run with exactly their own role.
func (e *env) rbacTokenFileAs(sa string, files ...string) string {
	e.t.Helper()
	var raw []byte
	for _, file := range files {
		b, err := os.ReadFile(file)
		if err != nil {
			e.t.Fatal(err)
		}
		raw = append(append(raw, "\n---\n"...), b...)
	}
	var saNS, saName string
	var err error
	for _, doc := range strings.Split(string(raw), "\n---\n") {
		var meta struct {
			Kind     string `json:"kind"`
			Metadata struct{ Name, Namespace string }
		}
		if err := yaml.Unmarshal([]byte(doc), &meta); err != nil {
			e.t.Fatal(err)
		}
		switch meta.Kind {
		case "ServiceAccount":
			var acct corev1.ServiceAccount
			mustYAML(e.t, doc, &acct)
			if sa != "" {
				acct.Name = sa
			}
			saNS, saName = acct.Namespace, acct.Name
			_, _ = e.client.CoreV1().Namespaces().Create(bg, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: acct.Namespace}}, metav1.CreateOptions{})
			_, err = e.client.CoreV1().ServiceAccounts(acct.Namespace).Create(bg, &acct, metav1.CreateOptions{})
		case "ClusterRole":
			var r rbacv1.ClusterRole
			mustYAML(e.t, doc, &r)
			_, err = e.client.RbacV1().ClusterRoles().Create(bg, &r, metav1.CreateOptions{})
		case "ClusterRoleBinding":
			var b rbacv1.ClusterRoleBinding
			mustYAML(e.t, doc, &b)
			renameSubjects(b.Subjects, sa)
			_, err = e.client.RbacV1().ClusterRoleBindings().Create(bg, &b, metav1.CreateOptions{})
		case "Role":
			var r rbacv1.Role
			mustYAML(e.t, doc, &r)
			_, err = e.client.RbacV1().Roles(r.Namespace).Create(bg, &r, metav1.CreateOptions{})
		case "RoleBinding":
			var b rbacv1.RoleBinding
			mustYAML(e.t, doc, &b)
			renameSubjects(b.Subjects, sa)
			_, err = e.client.RbacV1().RoleBindings(b.Namespace).Create(bg, &b, metav1.CreateOptions{})
		}
		if err != nil {
			e.t.Fatalf("apply %s: %v", meta.Kind, err)
		}
	}
	tr, err := e.client.CoreV1().ServiceAccounts(saNS).CreateToken(bg, saName, &authenticationv1.TokenRequest{}, metav1.CreateOptions{})
	if err != nil {
		e.t.Fatalf("token request: %v", err)
	}
	path := filepath.Join(e.dir, "token")
	if err := os.WriteFile(path, []byte(tr.Status.Token), 0o600); err != nil {
		e.t.Fatal(err)
	}
	return path
}

// renameSubjects names the ServiceAccount subjects sa ("": unchanged).
func renameSubjects(subjects []rbacv1.Subject, sa string) {
	for i := range subjects {
		if sa != "" && subjects[i].Kind == rbacv1.ServiceAccountKind {
			subjects[i].Name = sa
		}
	}
}

func mustYAML(t *testing.T, doc string, into any) {
	t.Helper()
	if err := yaml.Unmarshal([]byte(doc), into); err != nil {
		t.Fatal(err)
	}
}

func (e *env) createService(s lab.Service) {
	e.t.Helper()
	if _, err := lab.CreateService(bg, e.client, s); err != nil {
		e.t.Fatal(err)
	}
}

// createUDPService creates s with a UDP port (in one write: created as TCP
// and then switched, the controller could serve it as TCP meanwhile, one
// reload to add it and one to remove it).
func (e *env) createUDPService(s lab.Service) {
	e.t.Helper()
	s.UDP = true
	if _, err := lab.CreateService(bg, e.client, s); err != nil {
		e.t.Fatal(err)
	}
}

func (e *env) setEndpoints(svc string, eps ...lab.Endpoint) {
	e.t.Helper()
	if err := lab.ApplySlice(bg, e.client, lab.SliceFor(ns, svc, 8080, eps)); err != nil {
		e.t.Fatal(err)
	}
}

// pod is a ready endpoint on node.
func pod(i int, node string) lab.Endpoint {
	return lab.Endpoint{IP: fmt.Sprintf("10.244.0.%d", i), Node: node, Ready: true}
}

// threeNodes adds Ready nodes n1..n3 that answer on one node port, and
// returns that port.
func (e *env) threeNodes() int32 {
	e.t.Helper()
	np := nodePort()
	for i, n := range []string{"n1", "n2", "n3"} {
		e.addNode(n, i+1, true, np)
	}
	return np
}
