package e2e

import (
	"strings"
	"sync"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/haproxy-k8s-sync/haproxy-k8s-sync/internal/haproxy/haproxytest"
	"github.com/haproxy-k8s-sync/haproxy-k8s-sync/internal/testing/lab"
)

// The leader partitioned from the apiserver (issue 23): two replicas with
// the shipped RBAC, each reaching the apiserver through a TCP proxy of its
// own, each publishing its own address so that the status tells who wrote
// it. The leader's proxy is cut (new connections refused, open ones cut):
// the other replica takes over; once the partition heals, the old leader
// drives its HAProxy again but writes no status: every status written
// after the takeover, a new Service's included, is the new leader's.
func TestLeaderPartitionedOneStatusWriter(t *testing.T) {
	e := newEnv(t)
	np := nodePort()
	for i, n := range []string{"n1", "n2", "n3"} {
		e.addNode(n, i+1, true, np, np+1)
	}
	port := int32(haproxytest.FreePort(t))
	e.createService(lab.Service{Namespace: ns, Name: "web", Port: port, NodePort: np})
	token := e.rbacTokenFile()
	target := strings.TrimPrefix(e.kube.URL, "https://")
	proxyA, err := newAPIProxy("", target)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(proxyA.close)
	proxyB, err := newAPIProxy("", target)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(proxyB.close)
	elect := func(p *apiProxy, addr string) []string {
		return []string{"--kubeconfig", "", "--api-server", "https://" + p.addr, "--token-file", token, "--ca-file", e.kube.CAPath,
			"--leader-elect", "--leader-election-lease-duration", "2s", "--leader-election-renew-deadline", "1s",
			"--leader-election-retry-period", "200ms", "--publish-address", addr}
	}
	e.startController(elect(proxyA, "192.0.2.1")...)
	e.eventually("A serves", serves(port, "n1", "n2", "n3"))
	e.eventually("A leads and writes", e.ingress("web", "192.0.2.1"))
	b := e.startReplica("127.86.0.3", elect(proxyB, "192.0.2.2")...)
	e.eventually("B drives its own HAProxy", servesAt("127.86.0.3", port, "n1", "n2", "n3"))
	e.eventually("B sees the leader", func() error { return contains(b.log.String(), "leader elected") })

	// Every status written from now on, by whom (its address).
	writes := e.recordStatusWrites()

	proxyA.cut()
	cut := time.Now()
	e.eventually("B takes over", e.ingress("web", "192.0.2.2"))
	t.Logf("B wrote status %v after A was cut off", time.Since(cut).Round(10*time.Millisecond))
	if err := proxyA.restore(); err != nil {
		t.Fatal(err)
	}
	// A change once the partition healed: both replicas apply it, only
	// the leader writes its status.
	late := int32(haproxytest.FreePort(t))
	e.createService(lab.Service{Namespace: ns, Name: "late", Port: late, NodePort: np + 1})
	e.eventually("B serves late", servesAt("127.86.0.3", late, "n1", "n2", "n3"))
	e.eventually("A serves late (it reaches the apiserver again)", serves(late, "n1", "n2", "n3"))
	e.eventually("late's status by B", e.ingress("late", "192.0.2.2"))
	if err := contains(e.ctlLog.String(), "not leading"); err != nil {
		t.Errorf("A did not say it stopped leading: %v", err)
	}
	for _, w := range writes() {
		if w.addr == "192.0.2.1" && w.at.After(cut) {
			t.Errorf("A wrote status after it was cut off: %s at %s", w.svc, w.at.Format("15:04:05.000"))
		}
	}
}

type statusWrite struct {
	at       time.Time
	svc      string
	addr     string
	resource string
}

// recordStatusWrites watches the Services and records each change of one
// that carries a LoadBalancer status (its first address: the writer's);
// writes() returns them so far.
func (e *env) recordStatusWrites() (writes func() []statusWrite) {
	// From now on: a watch from the list's version sends changes only.
	list, err := e.client.CoreV1().Services(ns).List(bg, metav1.ListOptions{})
	if err != nil {
		e.t.Fatal(err)
	}
	w, err := e.client.CoreV1().Services(ns).Watch(bg, metav1.ListOptions{ResourceVersion: list.ResourceVersion})
	if err != nil {
		e.t.Fatal(err)
	}
	e.t.Cleanup(w.Stop)
	var mu sync.Mutex
	var out []statusWrite
	last := map[string]string{}
	go func() {
		for ev := range w.ResultChan() {
			svc, ok := ev.Object.(*corev1.Service)
			if !ok || len(svc.Status.LoadBalancer.Ingress) == 0 {
				continue
			}
			addr := svc.Status.LoadBalancer.Ingress[0].IP
			mu.Lock()
			if last[svc.Name] != addr || last[svc.Name+"/rv"] != svc.ResourceVersion {
				out = append(out, statusWrite{time.Now(), svc.Name, addr, svc.ResourceVersion})
			}
			last[svc.Name], last[svc.Name+"/rv"] = addr, svc.ResourceVersion
			mu.Unlock()
		}
	}()
	return func() []statusWrite {
		mu.Lock()
		defer mu.Unlock()
		return append([]statusWrite(nil), out...)
	}
}
