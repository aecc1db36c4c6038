package e2e

import (
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/haproxy-k8s-sync/haproxy-k8s-sync/internal/pools"
	"github.com/haproxy-k8s-sync/haproxy-k8s-sync/internal/settings"
	"github.com/haproxy-k8s-sync/haproxy-k8s-sync/internal/testing/lab"
	"github.com/haproxy-k8s-sync/haproxy-k8s-sync/internal/testing/poolcrd"
)

// Allocation robustness, with the shipped role, in a network namespace
// of the test's own (AnyIP pool): a request of the wrong IP family gets a
// Warning Event and nothing else moves (no reload, the same config, every
// other address kept and serving); a pool deleted while the controller is
// down leaves its address with its Service after the restart (rebuilt
// from the status: the pool that remains would otherwise hand it another
// one), and a new pool over that address never hands it out again.
func TestAddressPoolGoneAndWrongFamily(t *testing.T) {
	if !inPoolNetns(t, "198.18.0.0/24") {
		return
	}
	e := newEnv(t)
	dyn := e.addressPools(
		addressPool{"old", map[string]any{"addresses": []any{"198.18.0.30/32"}}},
		addressPool{"spare", map[string]any{"addresses": []any{"198.18.0.40-198.18.0.41"},
			"serviceAllocation": map[string]any{"priority": int64(10)}}})
	np := nodePort()
	for i, n := range []string{"n1", "n2"} {
		e.addNode(n, i+1, true, np, np+1, np+2, np+3)
	}
	e.createService(lab.Service{Namespace: ns, Name: "kept", Port: 443, NodePort: np})
	e.createService(lab.Service{Namespace: ns, Name: "other", Port: 443, NodePort: np + 1})
	token := e.rbacTokenFile()
	start := func() {
		e.startController(e.withRole(token, "--address-pools")...)
	}
	start()
	e.eventually("kept has old's address", e.ingress("kept", "198.18.0.30"))
	e.eventually("other has spare's first", e.ingress("other", "198.18.0.40"))
	e.eventually("kept serves", servesOn("198.18.0.30", 443))
	e.eventually("other serves", servesOn("198.18.0.40", 443))

	// Wrong family: an Event, and nothing else moves.
	reloads, cfg := e.reloads(), e.config()
	e.createService(lab.Service{Namespace: ns, Name: "six", Port: 8443, NodePort: np + 2,
		Annotations: map[string]string{settings.IPsAnnotation: "2001:db8:18::5"}})
	e.eventually("six: AddressWrongFamily", e.event("six", pools.ReasonWrongFamily))
	if err := e.ingress("six")(); err != nil {
		t.Errorf("six has a status: %v", err)
	}
	if got := e.reloads(); got != reloads {
		t.Errorf("a wrong-family request reloaded HAProxy (%d reloads, was %d)", got, reloads)
	}
	if got := e.config(); got != cfg {
		t.Errorf("a wrong-family request changed haproxy.cfg:\n%s\nwas\n%s", got, cfg)
	}
	for s, a := range map[string]string{"kept": "198.18.0.30", "other": "198.18.0.40"} {
		if err := e.ingress(s, a)(); err != nil {
			t.Errorf("after the wrong-family request: %v", err)
		}
		if err := servesOn(a, 443)(); err != nil {
			t.Errorf("%s after the wrong-family request: %v", s, err)
		}
	}

	// The pool goes while the controller is down: kept keeps its address
	// (spare, which serves it too, would give it 198.18.0.41 otherwise).
	e.stopController()
	if err := dyn.Resource(pools.GVR).Delete(bg, "old", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	start()
	e.createService(lab.Service{Namespace: ns, Name: "late", Port: 9443, NodePort: np + 3})
	e.eventually("late gets spare's second", e.ingress("late", "198.18.0.41"))
	if err := e.ingress("kept", "198.18.0.30")(); err != nil {
		t.Errorf("after its pool went: %v", err)
	}
	e.eventually("kept still serves", servesOn("198.18.0.30", 443))

	// A new pool over the kept address: it stays kept's (and counts as
	// assigned); a new Service gets the pool's other address.
	if err := poolcrd.Create(bg, dyn, "again", map[string]any{"addresses": []any{"198.18.0.30/31"},
		"serviceAllocation": map[string]any{"priority": int64(-1)}}); err != nil {
		t.Fatal(err)
	}
	if err := e.client.CoreV1().Services(ns).Delete(bg, "six", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	e.createService(lab.Service{Namespace: ns, Name: "newest", Port: 443, NodePort: np + 2})
	e.eventually("newest gets again's other address", e.ingress("newest", "198.18.0.31"))
	e.eventually("again counts both", poolCounts(dyn, "again", 2, 0))
	for s, a := range map[string]string{"kept": "198.18.0.30", "other": "198.18.0.40", "late": "198.18.0.41"} {
		if err := e.ingress(s, a)(); err != nil {
			t.Errorf("at the end: %v", err)
		}
	}
	e.eventually("newest serves", servesOn("198.18.0.31", 443))
}
