package e2e

import (
	"fmt"
	"testing"

	"github.com/haproxy-k8s-sync/haproxy-k8s-sync/internal/haproxy/haproxytest"
	"github.com/haproxy-k8s-sync/haproxy-k8s-sync/internal/testing/lab"
)

// A new externalTrafficPolicy: Local Service (node mode) whose
// EndpointSlice is written right after it, as the endpoint-slice
// controller does, is served after exactly one reload. Reloading for the
// Service alone would render its backend empty, with the 4 slots of an
// empty backend; its 5 nodes would then not fit and a second reload
// would follow (each costs seconds at 10,000 Services).
func TestNewServiceOneReload(t *testing.T) {
	const settle = "1s"
	e := newEnv(t)
	e.subnet = 62 // this test's nodes: 127.62.0.11-16
	np := nodePort()
	var nodes []string
	for i := range 6 {
		n := fmt.Sprintf("n%d", i+1)
		e.addNode(n, 11+i, true, np, np+1)
		nodes = append(nodes, n)
	}
	// A settle time with room for a loaded machine between the two writes;
	// no minimum interval, which would hold a reload right after the
	// first one anyway.
	e.startController("--reload-settle", settle, "--min-reload-interval", "0s")
	warm := int32(haproxytest.FreePort(t))
	e.createService(lab.Service{Namespace: ns, Name: "warm", Port: warm, NodePort: np, Local: true})
	e.setEndpoints("warm", pod(1, "n1"))
	e.eventually("warm serves", serves(warm, "n1"))

	before := e.reloads()
	port := int32(haproxytest.FreePort(t))
	e.createService(lab.Service{Namespace: ns, Name: "web", Port: port, NodePort: np + 1, Local: true})
	var eps []lab.Endpoint
	for i, n := range nodes[:5] {
		eps = append(eps, pod(10+i, n))
	}
	e.setEndpoints("web", eps...)
	e.eventually("web serves from its five nodes", serves(port, nodes[:5]...))
	// Behind the fixed listener with the pool (HKS_E2E_LISTENERS=tproxy)
	// the new Service takes a free large spare (five servers, more than a
	// small spare's four slots: docs/backend-pool.md, "Spares sized to
	// their class"), with no reload; the pool may then grow another
	// ahead of need, one reload after the settle time, which may or may
	// not fall before this count (internal/driver/tproxy TestLargerSpare
	// asserts that no reload is for the Service's slots).
	got := e.reloads() - before
	switch {
	case tproxyMode() && got > 1:
		t.Errorf("the new Service took %d reloads, want at most the pool's growth", got)
	case !tproxyMode() && got != 1:
		t.Errorf("the new Service took %d reloads, want 1", got)
	}
	e.eventually("warm still serves", serves(warm, "n1"))
}
