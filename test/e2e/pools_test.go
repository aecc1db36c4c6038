package e2e

import (
	"context"
	"fmt"
	"net"
	"os/exec"
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/client-go/dynamic"

	"github.com/haproxy-k8s-sync/haproxy-k8s-sync/internal/pools"
	"github.com/haproxy-k8s-sync/haproxy-k8s-sync/internal/settings"
	"github.com/haproxy-k8s-sync/haproxy-k8s-sync/internal/testing/lab"
	"github.com/haproxy-k8s-sync/haproxy-k8s-sync/internal/testing/poolcrd"
)

// inPoolNetns is inNetns (addrs as there) with cidr routed to the
// namespace's loopback the AnyIP way (ip route add local CIDR dev lo), as
// docs/addresses.md shows: every address of a pool in cidr is the host's.
func inPoolNetns(t *testing.T, cidr string, addrs ...string) bool {
	t.Helper()
	if !inNetns(t, addrs...) {
		return false
	}
	if out, err := exec.Command("ip", "route", "add", "local", cidr, "dev", "lo").CombinedOutput(); err != nil {
		t.Fatalf("AnyIP route: %v: %s", err, out)
	}
	return true
}

// addressPool is an AddressPool to create: its name and its spec.
type addressPool struct {
	name string
	spec map[string]any
}

// addressPools creates the shipped AddressPool CRD, waits until the
// apiserver serves it, creates the pools of create in their order and
// returns the dynamic client (for more pools and for their status).
func (e *env) addressPools(create ...addressPool) dynamic.Interface {
	e.t.Helper()
	dyn, err := dynamic.NewForConfig(e.kube.Config)
	if err != nil {
		e.t.Fatal(err)
	}
	if err := poolcrd.Install(bg, dyn, poolcrd.File("../..")); err != nil {
		e.t.Fatal(err)
	}
	for _, p := range create {
		if err := poolcrd.Create(bg, dyn, p.name, p.spec); err != nil {
			e.t.Fatalf("pool %s: %v", p.name, err)
		}
	}
	return dyn
}

// poolCounts is nil once AddressPool name's status counts assigned
// addresses in use and free ones left.
func poolCounts(dyn dynamic.Interface, name string, assigned, free int64) func() error {
	return func() error {
		u, err := dyn.Resource(pools.GVR).Get(bg, name, metav1.GetOptions{})
		if err != nil {
			return err
		}
		a, _, _ := unstructured.NestedInt64(u.Object, "status", "assigned")
		f, _, _ := unstructured.NestedInt64(u.Object, "status", "free")
		if a != assigned || f != free {
			return fmt.Errorf("AddressPool %s: status %v, want %d assigned, %d free", name, u.Object["status"], assigned, free)
		}
		return nil
	}
}

// servesOn reports nil once a connection to addr:port reaches a node.
func servesOn(addr string, port int32) func() error {
	return func() error {
		name, err := lab.Probe(net.JoinHostPort(addr, fmt.Sprint(port)), time.Second)
		if err != nil {
			return err
		}
		if !strings.HasPrefix(name, "n") {
			return fmt.Errorf("answered %q", name)
		}
		return nil
	}
}

// Address pools, end to end, in a network namespace of the test's own
// where the pool is routed to the host the AnyIP way (ip route add local
// POOL dev lo), as docs/addresses.md shows: two Services on port 443 get
// two addresses and both serve; a third with the same allow-shared-ip key
// and another port shares one; a fourth finds the pool exhausted, a fifth
// asks for a taken address and a sixth for one outside every pool (Events,
// nothing else moves); the pool's status counts; restarts of HAProxy and
// of the controller keep every address. The controller runs with exactly
// the shipped role.
func TestAddressPools(t *testing.T) {
	if !inPoolNetns(t, "198.18.0.0/24") {
		return
	}
	e := newEnv(t)
	dyn := e.addressPools()
	// The schema refuses what the controller could not read.
	if err := poolcrd.Create(bg, dyn, "bad", map[string]any{"addresses": []any{"198.18.0.1/24"}}); err == nil {
		t.Errorf("a CIDR with host bits was accepted")
	}
	if err := poolcrd.Create(bg, dyn, "bad", map[string]any{"addresses": []any{"198.18.0.9-2001:db8::1"}}); err == nil {
		t.Errorf("a range over two families was accepted")
	}
	if err := poolcrd.Create(bg, dyn, "web", map[string]any{"addresses": []any{"198.18.0.10-198.18.0.11"}}); err != nil {
		t.Fatal(err)
	}
	np := nodePort()
	for i, n := range []string{"n1", "n2", "n3"} {
		e.addNode(n, i+1, true, np, np+1, np+2, np+3)
	}
	shared := map[string]string{settings.SharedIPAnnotation: "k"}
	e.createService(lab.Service{Namespace: ns, Name: "a", Port: 443, NodePort: np, Annotations: shared})
	e.createService(lab.Service{Namespace: ns, Name: "b", Port: 443, NodePort: np + 1})
	e.createService(lab.Service{Namespace: ns, Name: "c", Port: 8443, NodePort: np + 2, Annotations: shared})
	token := e.rbacTokenFile()
	e.startController(e.withRole(token, "--address-pools")...)
	e.eventually("a has 198.18.0.10", e.ingress("a", "198.18.0.10"))
	e.eventually("b has 198.18.0.11", e.ingress("b", "198.18.0.11"))
	e.eventually("c shares 198.18.0.10", e.ingress("c", "198.18.0.10"))
	e.eventually("a serves", servesOn("198.18.0.10", 443))
	e.eventually("b serves", servesOn("198.18.0.11", 443))
	e.eventually("c serves", servesOn("198.18.0.10", 8443))
	e.eventually("pool status", poolCounts(dyn, "web", 2, 0))

	e.createService(lab.Service{Namespace: ns, Name: "d", Port: 9443, NodePort: np + 3})
	e.eventually("d: exhausted", e.event("d", pools.ReasonExhausted))
	e.createService(lab.Service{Namespace: ns, Name: "taken", Port: 9444, NodePort: np + 4,
		Annotations: map[string]string{settings.IPsAnnotation: "198.18.0.11"}})
	e.eventually("taken: Event", e.event("taken", pools.ReasonTaken))
	e.createService(lab.Service{Namespace: ns, Name: "outside", Port: 9445, NodePort: np + 5,
		Annotations: map[string]string{settings.IPsAnnotation: "203.0.113.9"}})
	e.eventually("outside: Event", e.event("outside", pools.ReasonNotInPool))
	for _, s := range []string{"d", "taken", "outside"} {
		if err := e.ingress(s)(); err != nil {
			t.Errorf("a Service without an address has a status: %v", err)
		}
	}

	// Restarts: HAProxy, then the controller; every address stays.
	e.hap.Restart(t)
	e.eventually("a serves after HAProxy restart", servesOn("198.18.0.10", 443))
	e.stopController()
	// Deleting b frees its address for d, the oldest waiting: only after
	// the restart, so the new controller rebuilt the rest from the statuses.
	e.startController(e.withRole(token, "--address-pools")...)
	if err := e.client.CoreV1().Services(ns).Delete(context.Background(), "b", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	e.eventually("d gets b's address", e.ingress("d", "198.18.0.11"))
	e.eventually("d serves", servesOn("198.18.0.11", 9443))
	for s, want := range map[string]string{"a": "198.18.0.10", "c": "198.18.0.10"} {
		if err := e.ingress(s, want)(); err != nil {
			t.Errorf("after restarts: %v", err)
		}
	}
}
