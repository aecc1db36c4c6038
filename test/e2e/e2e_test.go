package e2e

import (
	"context"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/haproxy-k8s-sync/haproxy-k8s-sync/internal/haproxy/haproxytest"
	"github.com/haproxy-k8s-sync/haproxy-k8s-sync/internal/testing/lab"
)

var bg = context.Background()

// Endpoints move between nodes under a Local policy while traffic flows:
// the backend follows through the Runtime API, with no reload and no failed
// connection; a terminating endpoint drains its node first.
func TestLocalPolicyEndpointChurnIsHitless(t *testing.T) {
	e := newEnv(t)
	np := e.threeNodes()
	port := int32(haproxytest.FreePort(t))
	e.createService(lab.Service{Namespace: ns, Name: "web", Port: port, NodePort: np, Local: true})
	setEndpoints := func(eps ...lab.Endpoint) { e.setEndpoints("web", eps...) }
	setEndpoints(pod(1, "n1"))
	e.startController()
	e.eventually("traffic reaches n1", serves(port, "n1"))
	before := e.reloads()

	stopLoad := e.startLoad(port)

	setEndpoints(pod(1, "n1"), pod(2, "n2"))
	e.eventually("scale up to n1,n2", serves(port, "n1", "n2"))
	setEndpoints(pod(1, "n1"), pod(2, "n2"), pod(3, "n3"))
	e.eventually("scale up to n1,n2,n3", serves(port, "n1", "n2", "n3"))
	// n3's pod terminates but still serves: n3 drains (no new connections).
	term := pod(3, "n3")
	term.Ready, term.Terminating = false, true
	setEndpoints(pod(1, "n1"), pod(2, "n2"), term)
	e.eventually("n3 drains", serves(port, "n1", "n2"))
	e.eventually("n3 in drain in the runtime", func() error {
		out, err := e.runtime.Exec(bg, []string{"show servers state " + e.haproxyBackend("be_default_web_"+fmt.Sprint(port))})
		if err != nil {
			return err
		}
		// srv_admin_state bit 0x08 = forced drain
		for _, l := range strings.Split(out[0], "\n") {
			f := strings.Fields(l)
			if len(f) > 6 && f[4] == fmt.Sprintf("127.%d.0.3", e.subnet) {
				if st, err := strconv.Atoi(f[6]); err == nil && st&8 != 0 {
					return nil
				}
			}
		}
		return fmt.Errorf("no drained server for n3 in:\n%s", out[0])
	})
	setEndpoints(pod(1, "n1"), pod(2, "n2"))
	setEndpoints(pod(2, "n2"))
	e.eventually("scale down to n2", serves(port, "n2"))
	r := stopLoad()

	if got := e.reloads(); got != before {
		t.Errorf("endpoint churn caused %d reloads, want 0", got-before)
	}
	t.Logf("load: %d connections, %d failed, reloads %d", r.total, r.failed, e.reloads()-before)
}

// With the Cluster policy every eligible node serves; nodes that go
// NotReady or get the exclude label leave, and come back, without reloads;
// when every node not excluded is NotReady they all stay (fail open).
// The controller runs as on a plain Linux host: API URL + token file + CA,
// with the token of the ServiceAccount of deploy/services/rbac.yaml (least privilege).
// Without health checks of their own (check auto, the default, with the
// default node check; or check false) the servers follow their nodes
// (--track-nodes): a node that joined after the last reload sits in a slot
// that follows no node, and still leaves when excluded.
func TestClusterPolicyFollowsNodes(t *testing.T) {
	for _, check := range []string{"auto", "true", "false"} {
		// Not "check=": the name makes the test's directory, and a
		// config path with "=" cannot hold tproxy mode's maps
		// (model.ValidFilePath; the controller refuses it at start).
		t.Run("check-"+check, func(t *testing.T) { clusterPolicyFollowsNodes(t, check) })
	}
}

func clusterPolicyFollowsNodes(t *testing.T, check string) {
	e := newEnv(t)
	np := e.threeNodes()
	port := int32(haproxytest.FreePort(t))
	e.createService(lab.Service{Namespace: ns, Name: "api", Port: port, NodePort: np})
	e.startController(e.withRole(e.rbacTokenFile(), "--default-check="+check)...)
	e.eventually("all nodes serve", serves(port, "n1", "n2", "n3"))
	before := e.reloads()

	if err := lab.SetNodeReady(bg, e.client, "n2", false); err != nil {
		t.Fatal(err)
	}
	e.eventually("NotReady n2 leaves", serves(port, "n1", "n3"))
	// Events are allowed too: a UDP port is reported on the Service.
	e.createUDPService(lab.Service{Namespace: ns, Name: "udp", Port: 53, NodePort: np + 1})
	e.eventually("Event written with the shipped RBAC", e.event("udp", "UnsupportedProtocol"))
	if err := lab.SetNodeExcluded(bg, e.client, "n3", true); err != nil {
		t.Fatal(err)
	}
	e.eventually("excluded n3 leaves", serves(port, "n1"))
	if err := lab.SetNodeReady(bg, e.client, "n2", true); err != nil {
		t.Fatal(err)
	}
	e.addNode("n4", 4, true, np)
	e.eventually("n2 back, n4 added", serves(port, "n1", "n2", "n4"))
	if err := lab.SetNodeExcluded(bg, e.client, "n4", true); err != nil {
		t.Fatal(err)
	}
	e.eventually("excluded n4 leaves", serves(port, "n1", "n2"))
	// Every node that may serve NotReady (n3 and n4 are excluded): they
	// all stay (fail open), reported with an Event on each.
	if err := lab.SetNodeReady(bg, e.client, "n2", false); err != nil {
		t.Fatal(err)
	}
	e.eventually("NotReady n2 leaves while n1 is Ready", serves(port, "n1"))
	if err := lab.SetNodeReady(bg, e.client, "n1", false); err != nil {
		t.Fatal(err)
	}
	e.eventually("every node NotReady: n1 and n2 serve (fail open)", serves(port, "n1", "n2"))
	e.eventually("the Event on n1", e.event("n1", "NotReadyKept"))
	e.eventually("the Event on n2", e.event("n2", "NotReadyKept"))
	if err := lab.SetNodeReady(bg, e.client, "n1", true); err != nil {
		t.Fatal(err)
	}
	e.eventually("n1 Ready again: NotReady n2 leaves", serves(port, "n1"))
	if err := lab.SetNodeReady(bg, e.client, "n2", true); err != nil {
		t.Fatal(err)
	}
	e.eventually("n2 Ready again", serves(port, "n1", "n2"))
	if check != "true" {
		cfg, err := os.ReadFile(e.cfgPath)
		if err != nil {
			t.Fatal(err)
		}
		if !strings.Contains(string(cfg), "track _nodes/") {
			t.Errorf("no server follows its node in the config:\n%s", cfg)
		}
	}
	if got := e.reloads(); got != before {
		t.Errorf("node churn caused %d reloads, want 0", got-before)
	}
}

// An invalid annotation produces a Warning Event and the Service keeps its
// last good configuration; nothing of the value reaches haproxy.cfg.
func TestInvalidAnnotationKeepsLastGood(t *testing.T) {
	e := newEnv(t)
	np := nodePort()
	e.addNode("n1", 1, true, np)
	port := int32(haproxytest.FreePort(t))
	_, err := lab.CreateService(bg, e.client, lab.Service{Namespace: ns, Name: "db", Port: port, NodePort: np,
		Annotations: map[string]string{"haproxy-k8s-sync.io/balance": "leastconn"}})
	if err != nil {
		t.Fatal(err)
	}
	e.startController()
	e.eventually("db serves", serves(port, "n1"))
	e.eventually("leastconn in config", func() error { return contains(e.config(), "balance leastconn") })

	svc, err := e.client.CoreV1().Services(ns).Get(bg, "db", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	svc.Annotations["haproxy-k8s-sync.io/balance"] = "roundrobin\nlisten evil\n  bind :1"
	if _, err := e.client.CoreV1().Services(ns).Update(bg, svc, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	e.eventually("InvalidAnnotation event", e.event("db", "InvalidAnnotation"))
	cfg := e.config()
	if strings.Contains(cfg, "evil") || !strings.Contains(cfg, "balance leastconn") {
		t.Fatalf("config after invalid annotation:\n%s", cfg)
	}
	if err := serves(port, "n1")(); err != nil {
		t.Fatalf("service broken by invalid annotation: %v", err)
	}
	// The last good settings survive a controller restart.
	e.stopController()
	e.startController()
	e.eventually("first pass of the new controller", func() error {
		log := e.ctlLog.String()
		if err := contains(log, "reason=InvalidAnnotation"); err != nil {
			return err
		}
		return contains(log, "msg=update")
	})
	e.eventually("still served after restart", serves(port, "n1"))
	if cfg := e.config(); !strings.Contains(cfg, "balance leastconn") || e.serviceFrontend("fe_default_db_", port) != nil {
		t.Fatalf("last good settings lost over a controller restart:\n%s", cfg)
	}
	// A valid value is applied again.
	svc, _ = e.client.CoreV1().Services(ns).Get(bg, "db", metav1.GetOptions{})
	svc.Annotations["haproxy-k8s-sync.io/balance"] = "source"
	if _, err := e.client.CoreV1().Services(ns).Update(bg, svc, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	e.eventually("source in config", func() error { return contains(e.config(), "balance source") })
	e.eventually("db serves after fix", serves(port, "n1"))
}

// Two Services want the same port: the later one gets an Event and the
// earlier keeps serving. A UDP port is skipped with an Event.
func TestPortConflictAndUDP(t *testing.T) {
	e := newEnv(t)
	np := nodePort()
	e.addNode("n1", 1, true, np, np+1)
	port := int32(haproxytest.FreePort(t))
	e.createService(lab.Service{Namespace: ns, Name: "first", Port: port, NodePort: np})
	e.startController()
	e.eventually("first serves", serves(port, "n1"))
	e.createService(lab.Service{Namespace: ns, Name: "second", Port: port, NodePort: np + 1})
	e.eventually("PortConflict event", e.event("second", "PortConflict"))
	if err := serves(port, "n1")(); err != nil {
		t.Fatal(err)
	}
	// When the older Service goes away, the later one gets the port.
	if err := e.client.CoreV1().Services(ns).Delete(bg, "first", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	e.eventually("second takes the port", func() error {
		if tproxyMode() { // the key now names second's backend
			return e.listenerMapsTo(tproxyVIP, port, fmt.Sprintf("be_default_second_%d", port))
		}
		return contains(e.config(), fmt.Sprintf("frontend fe_default_second_%d\n", port))
	})
	if strings.Contains(e.config(), "fe_default_first_") {
		t.Errorf("deleted Service still in the config")
	}
	e.eventually("second serves", serves(port, "n1"))
	e.createUDPService(lab.Service{Namespace: ns, Name: "dns", Port: 53, NodePort: np + 2})
	e.eventually("UnsupportedProtocol event", e.event("dns", "UnsupportedProtocol"))
}

// Killing HAProxy (restarted by its supervisor) or the controller converges
// back with no manual step, and the file on disk always describes what runs.
func TestRestartsConverge(t *testing.T) {
	e := newEnv(t)
	np := e.threeNodes()
	port := int32(haproxytest.FreePort(t))
	e.createService(lab.Service{Namespace: ns, Name: "web", Port: port, NodePort: np, Local: true})
	apply := func(eps ...lab.Endpoint) { e.setEndpoints("web", eps...) }
	apply(pod(1, "n1"))
	e.startController()
	e.eventually("n1 serves", serves(port, "n1"))
	apply(pod(1, "n1"), pod(2, "n2"))
	e.eventually("n1,n2 serve", serves(port, "n1", "n2"))

	// HAProxy dies and its supervisor restarts it from the file on disk.
	e.hap.Kill(t)
	e.hap.Restart(t)
	e.eventually("after HAProxy restart", serves(port, "n1", "n2"))
	apply(pod(2, "n2"), pod(3, "n3"))
	e.eventually("changes after HAProxy restart", serves(port, "n2", "n3"))

	// The controller dies; changes happen; a new controller converges.
	e.stopController()
	apply(pod(1, "n1"), pod(3, "n3"))
	e.startController()
	e.eventually("after controller restart", serves(port, "n1", "n3"))

	// The file on disk is the running config once the controller has
	// stopped (it writes what is due): restarting HAProxy from it alone
	// serves the same.
	e.stopController()
	t.Cleanup(func() { e.logDisk(port) })
	e.hap.Kill(t)
	e.hap.Restart(t)
	e.eventually("HAProxy alone from disk", serves(port, "n1", "n3"))
	if _, err := os.Stat(filepath.Join(e.dir, "state")); err != nil {
		t.Errorf("server state file: %v", err)
	}
}

// A new Service whose port another process holds is left out before any
// reload (HAProxy 2.6 would pause every listener while it failed to bind,
// and the whole change would fail: docs/reliability.md): no reload onto
// it is attempted, the old workers keep serving, the refused frontend
// never reaches the disk, the Service gets a Warning Event PortTaken,
// every other change still applies (a Service created meanwhile is
// served), and the refused one is retried until its port is free.
func TestTakenPortRefusedBeforeReloadAndRetried(t *testing.T) {
	portsOnly(t)
	e := newEnv(t)
	np := nodePort()
	e.addNode("n1", 1, true, np, np+1, np+2)
	port := int32(haproxytest.FreePort(t))
	e.createService(lab.Service{Namespace: ns, Name: "good", Port: port, NodePort: np})
	e.startController()
	e.eventually("good serves", serves(port, "n1"))

	// Another process holds the port the next Service wants.
	busy, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	busyPort := int32(busy.Addr().(*net.TCPAddr).Port)
	e.createService(lab.Service{Namespace: ns, Name: "late", Port: busyPort, NodePort: np + 1})
	e.eventually("a Warning Event PortTaken on late", e.event("late", "PortTaken"))
	// The rest still applies: a Service created meanwhile is served.
	other := int32(haproxytest.FreePort(t))
	e.createService(lab.Service{Namespace: ns, Name: "other", Port: other, NodePort: np + 2})
	e.eventually("other serves while late's port is taken", serves(other, "n1"))
	p, err := e.master.ShowProc(bg)
	if err != nil {
		t.Fatal(err)
	}
	if p.Failed != 0 {
		t.Errorf("a reload failed: %+v", p)
	}
	if err := serves(port, "n1")(); err != nil {
		t.Fatalf("good stopped serving: %v", err)
	}
	if strings.Contains(e.config(), fmt.Sprintf("fe_default_late_%d", busyPort)) {
		t.Errorf("the refused frontend is on disk")
	}
	busy.Close()
	e.eventually("retry succeeds once the port is free", serves(busyPort, "n1"))
	e.eventually("good still serves", serves(port, "n1"))
	e.eventually("other still serves", serves(other, "n1"))
}
