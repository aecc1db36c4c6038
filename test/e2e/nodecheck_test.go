package e2e

import (
	"fmt"
	"net"
	"strings"
	"testing"
	"time"

	"github.com/haproxy-k8s-sync/haproxy-k8s-sync/internal/haproxy"
	"github.com/haproxy-k8s-sync/haproxy-k8s-sync/internal/haproxy/haproxytest"
	"github.com/haproxy-k8s-sync/haproxy-k8s-sync/internal/settings"
	"github.com/haproxy-k8s-sync/haproxy-k8s-sync/internal/testing/lab"
)

// With --node-check, each node is checked once, on its server in the
// _nodes backend, and the servers that follow their node (a Service with
// check=false) leave with it: a node whose kube-proxy /healthz answers 503
// gets no new connections within about fall x interval, with no reload
// and nothing for the controller to do (no Kubernetes object changed), and
// comes back when it answers 200 again; a node that dies (ports and
// /healthz gone) leaves likewise. Retries with redispatch keep every
// connection of a load running meanwhile.
func TestNodeCheckMovesTraffic(t *testing.T) {
	e := newEnv(t)
	e.subnet = 61 // this test's nodes: 127.61.0.21-22
	np := nodePort()
	for i, n := range []string{"n1", "n2"} {
		e.addNode(n, 21+i, true, np) // with kube-proxy's /healthz stand-in on :10256
	}
	health := e.health
	port := int32(haproxytest.FreePort(t))
	e.createService(lab.Service{Namespace: ns, Name: "web", Port: port, NodePort: np,
		Annotations: map[string]string{settings.Prefix + "check": "false"}})
	e.startController("--node-check=http:10256/healthz", "--node-check-interval=200ms",
		"--node-check-rise=1", "--node-check-fall=2")
	e.eventually("both nodes serve", serves(port, "n1", "n2"))
	if err := contains(e.config(), "default-server check inter 200ms rise 1 fall 2 port 10256"); err != nil {
		t.Fatalf("the _nodes backend is not checked: %v", err)
	}
	before := e.reloads()

	stopLoad := e.startLoad(port)
	n2 := fmt.Sprintf("127.%d.0.22", e.subnet)
	n2Down := e.serverDown(fmt.Sprintf("be_%s_web_%d", ns, port), n2)
	health["n2"].SetHealthy(false)
	start := time.Now()
	e.eventually("n2's server of web down", n2Down)
	t.Logf("n2 out of service %v after its /healthz answered 503 (check every 200ms, fall 2)", time.Since(start).Round(time.Millisecond))
	e.eventually("traffic to n1 only", serves(port, "n1"))
	health["n2"].SetHealthy(true)
	e.eventually("n2 back", serves(port, "n1", "n2"))
	r := stopLoad() // a node taken out by its health check: no failure
	t.Logf("load while n2 went out and back: %d connections, %d failed", r.total, r.failed)

	// The node dies: its ports and its /healthz stop answering. A
	// connection HAProxy had already handed to it (accepted by the kernel,
	// not yet by the process) is lost with it, as with any real node, so
	// failures in that window are counted, not forbidden; once the check
	// has taken the node out, none may fail.
	stopc := make(chan struct{})
	dying := make(chan loadResult, 1)
	go func() {
		tot, f, err := load(port, 0, 50000, stopc)
		dying <- loadResult{tot, f, err}
	}()
	e.nodes["n2"].Close()
	health["n2"].Close()
	start = time.Now()
	e.eventually("dead n2's server of web down", n2Down)
	t.Logf("dead n2 out of service %v after it died", time.Since(start).Round(time.Millisecond))
	close(stopc)
	d := <-dying
	t.Logf("load while n2 died: %d connections, %d failed (first: %v)", d.total, d.failed, d.err)
	e.eventually("traffic to n1 only", serves(port, "n1"))
	for i := range 200 {
		if name, err := lab.Probe(net.JoinHostPort(serviceIP(), fmt.Sprint(port)), 2*time.Second); err != nil || name != "n1" {
			t.Fatalf("connection %d after dead n2 was taken out: %q, %v; want n1", i, name, err)
		}
	}

	if got := e.reloads(); got != before {
		t.Errorf("the node check caused %d reloads, want 0", got-before)
	}
}

// serverDown returns nil once no server of backend at addr is up.
func (e *env) serverDown(backend, addr string) func() error {
	return func() error {
		rt := haproxy.NewRuntime(e.hap.StatsSocket) // not a connection to a worker before a reload
		defer rt.Close()
		st, err := rt.ShowServersState(bg)
		if err != nil {
			return err
		}
		for _, s := range st {
			if s.Backend == backend && s.Addr.String() == addr && s.Up() {
				return fmt.Errorf("still up: %+v", s)
			}
		}
		return nil
	}
}

// By default (--local-check=health-check-node-port since issue 29), the
// servers of a Local Service that has a healthCheckNodePort are checked on
// kube-proxy's per-Service health check there (GET /): a node whose health
// check answers 503 (its kube-proxy sees no local endpoint) is taken out
// by HAProxy itself, with no reload, and comes back with 200. A node whose
// endpoint the EndpointSlice says is ready again while its kube-proxy
// does not serve it yet (its healthCheckNodePort still 503, its /healthz
// 200: kube-proxy seconds behind) is not sent a connection until its
// kube-proxy serves it. With the former default, following the node
// check, it was at once: connections lost on real nodes (TestRealNodeHealth).
func TestLocalHealthCheckNodePort(t *testing.T) {
	e := newEnv(t)
	e.localCheckDefault = true
	e.subnet = 61 // this test's nodes: 127.61.0.11-12
	np := nodePort()
	e.addNode("n1", 11, true, np)
	e.addNode("n2", 12, true, np)
	port := int32(haproxytest.FreePort(t))
	svc, err := lab.CreateService(bg, e.client, lab.Service{Namespace: ns, Name: "web", Port: port, NodePort: np, Local: true})
	if err != nil {
		t.Fatal(err)
	}
	hcnp := svc.Spec.HealthCheckNodePort
	if hcnp == 0 {
		t.Fatal("no healthCheckNodePort allocated")
	}
	health := map[string]*lab.HealthServer{}
	for i, n := range []string{"n1", "n2"} {
		h, err := lab.NewHealthServer(fmt.Sprintf("127.%d.0.%d:%d", e.subnet, 11+i, hcnp))
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(h.Close)
		health[n] = h
	}
	e.setEndpoints("web", pod(1, "n1"), pod(2, "n2"))
	e.startController() // the default --local-check
	e.eventually("both nodes serve", serves(port, "n1", "n2"))
	for _, want := range []string{"option httpchk GET /\n", fmt.Sprintf(" port %d", hcnp)} {
		if err := contains(e.config(), want); err != nil {
			t.Fatalf("not checked on the healthCheckNodePort: %v", err)
		}
	}
	before := e.reloads()
	health["n2"].SetHealthy(false)
	e.eventually("n2's server down", e.serverDown(fmt.Sprintf("be_%s_web_%d", ns, port), fmt.Sprintf("127.%d.0.12", e.subnet)))
	e.eventually("traffic to n1 only", serves(port, "n1"))
	health["n2"].SetHealthy(true)
	e.eventually("n2 back", serves(port, "n1", "n2"))

	// n1's Pod goes and comes back; n1's kube-proxy lags behind.
	n1 := fmt.Sprintf("127.%d.0.11", e.subnet)
	health["n1"].SetHealthy(false)
	e.setEndpoints("web", pod(2, "n2"))
	e.eventually("n1 leaves with its endpoint", serves(port, "n2"))
	e.setEndpoints("web", pod(1, "n1"), pod(2, "n2"))
	e.eventually("n1's server back in its backend", e.serverInService(fmt.Sprintf("be_%s_web_%d", ns, port), n1))
	// Many checks (100 ms apart here) and connections long: none reaches n1.
	for end := time.Now().Add(2 * time.Second); time.Now().Before(end); {
		if err := serves(port, "n2")(); err != nil {
			t.Fatalf("n1 served before its kube-proxy did (healthCheckNodePort 503): %v", err)
		}
	}
	health["n1"].SetHealthy(true)
	e.eventually("n1 serves once its kube-proxy does", serves(port, "n1", "n2"))
	if got := e.reloads(); got != before {
		t.Errorf("%d reloads, want 0", got-before)
	}
}

// serverInService reports nil once backend (its HAProxy name: a spare of
// the pool in tproxy mode) has a server at addr out of maintenance.
func (e *env) serverInService(backend, addr string) func() error {
	return func() error {
		rt := haproxy.NewRuntime(e.hap.StatsSocket) // not a connection to a worker before a reload
		defer rt.Close()
		st, err := rt.ShowServersState(bg)
		if err != nil {
			return err
		}
		be := e.haproxyBackend(backend)
		for _, s := range st {
			if s.Backend == be && s.Addr.String() == addr && !s.Maint() {
				return nil
			}
		}
		return fmt.Errorf("no server at %s in service in %s", addr, be)
	}
}

// With the default flags (check auto, --node-check=http:10256/healthz), the
// servers of a Cluster and of a Local Service follow their node, and each
// node is checked once, on kube-proxy's /healthz (the stand-ins answer on
// their own loopback addresses, port 10256): a node whose /healthz answers
// 503 leaves both Services within about fall x interval, with no Runtime
// API command and no reload, and comes back on 200.
func TestNodeCheckByDefault(t *testing.T) {
	e := newEnv(t)
	e.subnet = 61 // this test's nodes: 127.61.0.1-3
	np := nodePort()
	for i, n := range []string{"n1", "n2", "n3"} {
		e.addNode(n, i+1, true, np, np+1) // with kube-proxy's /healthz stand-in on :10256
	}
	web, shop := int32(haproxytest.FreePort(t)), int32(haproxytest.FreePort(t))
	e.createService(lab.Service{Namespace: ns, Name: "web", Port: web, NodePort: np})
	e.createService(lab.Service{Namespace: ns, Name: "shop", Port: shop, NodePort: np + 1, Local: true})
	e.setEndpoints("shop", pod(1, "n1"), pod(2, "n2"))
	l, err := net.Listen("tcp", "127.61.1.1:0")
	if err != nil {
		t.Fatal(err)
	}
	maddr := l.Addr().String()
	l.Close()
	e.startController("--metrics-address", maddr) // no check or node-check flag: the defaults (Local Services: the env's --local-check=service-port)
	e.eventually("web served by every node", serves(web, "n1", "n2", "n3"))
	e.eventually("shop served by the nodes of its endpoints", serves(shop, "n1", "n2"))
	cfg := e.config()
	for _, want := range []string{
		"backend _nodes\n\toption httpchk GET /healthz\n\thttp-check expect status 200\n\tdefault-server check inter 2s rise 2 fall 2 port 10256\n",
		fmt.Sprintf("server s1 127.61.0.1:%d track _nodes/", np),
		fmt.Sprintf("server s1 127.61.0.1:%d track _nodes/", np+1),
	} {
		if err := contains(cfg, want); err != nil {
			t.Fatalf("servers do not follow their node's check: %v", err)
		}
	}
	if strings.Contains(cfg, "check inter 100ms") { // the env's --default-check-interval
		t.Fatalf("servers are checked by themselves too:\n%s", cfg)
	}
	if err := contains(e.ctlLog.String(), `node-check=http:10256/healthz interval=2s rise=2 fall=2`); err != nil {
		t.Errorf("the start does not say which node check is in effect: %v", err)
	}
	m := &scraper{url: "http://" + maddr + "/metrics"}
	cmds := m.value(t, `haproxy_k8s_sync_runtime_commands_total{driver="haproxy"}`)
	reloads := e.reloads()

	n2 := "127.61.0.2"
	e.health["n2"].SetHealthy(false)
	start := time.Now()
	e.eventually("n2's server of web down", e.serverDown(fmt.Sprintf("be_%s_web_%d", ns, web), n2))
	e.eventually("n2's server of shop down", e.serverDown(fmt.Sprintf("be_%s_shop_%d", ns, shop), n2))
	t.Logf("n2 out of both Services %v after its /healthz answered 503 (default: every 2s, fall 2)", time.Since(start).Round(time.Millisecond))
	e.eventually("web without n2", serves(web, "n1", "n3"))
	e.eventually("shop without n2", serves(shop, "n1"))
	e.health["n2"].SetHealthy(true)
	start = time.Now()
	e.eventually("web with n2 again", serves(web, "n1", "n2", "n3"))
	e.eventually("shop with n2 again", serves(shop, "n1", "n2"))
	t.Logf("n2 back %v after its /healthz answered 200 (rise 2)", time.Since(start).Round(time.Millisecond))

	if got := m.value(t, `haproxy_k8s_sync_runtime_commands_total{driver="haproxy"}`); got != cmds {
		t.Errorf("the node check cost %v Runtime API commands, want 0", got-cmds)
	}
	if got := e.reloads(); got != reloads {
		t.Errorf("the node check cost %d reloads, want 0", got-reloads)
	}
}
