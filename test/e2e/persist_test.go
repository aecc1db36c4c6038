package e2e

import (
	"fmt"
	"strings"
	"testing"

	"github.com/haproxy-k8s-sync/haproxy-k8s-sync/internal/haproxy/haproxytest"
	"github.com/haproxy-k8s-sync/haproxy-k8s-sync/internal/testing/lab"
)

// A controller that stops writes the changes it applied through the
// Runtime API and had not yet written (their quiet period not over): HAProxy
// restarted from the files alone serves what ran when the controller
// stopped.
func TestStopWritesWhatIsDue(t *testing.T) {
	e := newEnv(t)
	np := e.threeNodes()
	port := int32(haproxytest.FreePort(t))
	e.createService(lab.Service{Namespace: ns, Name: "web", Port: port, NodePort: np, Local: true})
	e.setEndpoints("web", pod(1, "n1"))
	// Persistence never comes due while the controller runs.
	e.startController("--persist-interval", "1h", "--persist-max-delay", "1h")
	e.eventually("n1 serves", serves(port, "n1"))
	reloads := e.reloads()

	e.setEndpoints("web", pod(1, "n1"), pod(3, "n3"))
	e.eventually("n1,n3 serve", serves(port, "n1", "n3"))
	if got := e.reloads(); got != reloads {
		t.Fatalf("%d reloads for an endpoint change: the test wants one applied through the Runtime API only", got-reloads)
	}
	n3 := fmt.Sprintf("127.%d.0.3:%d", e.subnet, np)
	if strings.Contains(e.config(), n3) {
		t.Fatalf("n3 (%s) written before the controller stopped: the test wants it still due", n3)
	}

	e.stopController()
	if err := contains(e.config(), n3); err != nil {
		// stopController shows the log only of a test already failed.
		t.Errorf("config after the controller stopped: %v; controller log:\n%s", err, e.ctlLog.String())
	}
	e.hap.Kill(t)
	e.hap.Restart(t)
	e.eventually("HAProxy alone from disk", serves(port, "n1", "n3"))
}
