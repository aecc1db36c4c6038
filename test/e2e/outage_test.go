package e2e

import (
	"strings"
	"testing"
	"time"

	"github.com/haproxy-k8s-sync/haproxy-k8s-sync/internal/haproxy/haproxytest"
	"github.com/haproxy-k8s-sync/haproxy-k8s-sync/internal/testing/lab"
)

// apiserverOutage is how long the apiserver stays down: long enough that
// client-go's reflectors, retrying with their backoff (0.8 s doubling,
// jitter 1.0), wait over 10 s before their next try when it is back.
const apiserverOutage = 22 * time.Second

// The real apiserver is killed and started again after a long outage.
// HAProxy serves what it had meanwhile, and the controller relists as
// soon as the apiserver answers /readyz again (internal/source/relist.go):
// a Service created right after is served within the convergence target
// of issue 23 (5 s). Without the relist the informers come back only
// after their own backoff, 0-40 s later (docs/reliability.md).
func TestRelistAfterAPIServerOutage(t *testing.T) {
	e := newEnv(t)
	np := nodePort()
	e.addNode("n1", 1, true, np, np+1)
	port := int32(haproxytest.FreePort(t))
	e.createService(lab.Service{Namespace: ns, Name: "web", Port: port, NodePort: np})
	e.startController()
	e.eventually("web serves", serves(port, "n1"))

	e.kube.StopAPIServer()
	// The outage's length, not synchronisation.
	time.Sleep(apiserverOutage)
	if err := serves(port, "n1")(); err != nil {
		t.Errorf("web not served during the outage: %v", err)
	}
	if err := e.kube.StartAPIServer(); err != nil {
		t.Fatalf("apiserver did not start again: %v", err)
	}
	back := time.Now()
	late := int32(haproxytest.FreePort(t))
	e.createService(lab.Service{Namespace: ns, Name: "late", Port: late, NodePort: np + 1})
	if err := waitUntil(targetConverge, serves(late, "n1")); err != nil {
		t.Fatalf("a Service created once the apiserver was back: %v", err)
	}
	t.Logf("served %v after the apiserver was ready again", time.Since(back).Round(10*time.Millisecond))
	if !strings.Contains(e.ctlLog.String(), "relisted after the apiserver outage") {
		t.Errorf("the controller did not say it relisted")
	}
	e.eventually("web still serves", serves(port, "n1"))
}
