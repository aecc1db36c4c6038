package e2e

import (
	"fmt"
	"testing"
	"time"

	"github.com/haproxy-k8s-sync/haproxy-k8s-sync/internal/dataplane"
	"github.com/haproxy-k8s-sync/haproxy-k8s-sync/internal/haproxy/haproxytest"
	"github.com/haproxy-k8s-sync/haproxy-k8s-sync/internal/testing/lab"
)

// The Data Plane API mode's faults (issue 23), against the test server
// standing in for the API (the real API v3.4.0 is built by hand, see
// docs/dataplane.md), beside a local HAProxy as a second --instance:
//   - the API killed (connections refused) while a node is excluded, and
//     started again 5 s later: the local HAProxy follows at once (a dead
//     instance delays no other), the API's HAProxy within the
//     convergence target (5 s) of the API's return;
//   - the API's HAProxy restarted behind our back (not through the API:
//     the runtime changes it had are gone) right after a change: the
//     controller sees the new worker and serves the truth again within
//     the target;
//   - a server put in maintenance behind our back through the API's
//     runtime endpoint: the resync corrects it.
func TestDataplaneAPIKilledAndHAProxyRestarted(t *testing.T) {
	e := newEnv(t)
	np := e.threeNodes()
	const backend = "be_web_ops"
	api, apiInstance := opsDataplane(t, backend, "pw-chaos")
	port := int32(haproxytest.FreePort(t))
	e.createService(lab.Service{Namespace: ns, Name: "web", Port: port, NodePort: np})
	e.setEndpoints("web", pod(1, "n1"))
	e.startController("--service", ns+"/web", "--backend-name", backend,
		"--instance", localInstance("a", e.dir, e.hap), "--instance", apiInstance)
	node := func(i int) string { return fmt.Sprintf("127.%d.0.%d:%d", e.subnet, i, np) }
	apiServes := func(want ...int) func() error {
		set := map[string]bool{}
		for _, i := range want {
			set[node(i)] = true
		}
		return func() error { return servingIs(api, backend, set) }
	}
	e.eventually("HAProxy a serves every node", instanceServes(port, "n1", "n2", "n3"))
	e.eventually("API c serves every node", apiServes(1, 2, 3))

	// The API killed; a change meanwhile.
	api.Kill()
	if err := lab.SetNodeExcluded(bg, e.client, "n2", true); err != nil {
		t.Fatal(err)
	}
	e.eventually("HAProxy a drops n2 while the API is down", instanceServes(port, "n1", "n3"))
	time.Sleep(5 * time.Second) // the outage's length, not synchronisation
	if err := api.Revive(); err != nil {
		t.Fatal(err)
	}
	back := time.Now()
	if err := waitUntil(targetConverge, apiServes(1, 3)); err != nil {
		t.Fatalf("the API's HAProxy after the API came back: %v", err)
	}
	t.Logf("API killed 5 s: its HAProxy served the change %v after the API was back", time.Since(back).Round(10*time.Millisecond))

	// HAProxy behind the API restarted right after a change.
	if err := lab.SetNodeExcluded(bg, e.client, "n2", false); err != nil {
		t.Fatal(err)
	}
	e.eventually("API c serves n2 again", apiServes(1, 2, 3))
	api.Restart()
	restarted := time.Now()
	lost := apiServes(1, 2, 3)() != nil
	if err := waitUntil(targetConverge, apiServes(1, 2, 3)); err != nil {
		t.Fatalf("the API's HAProxy after it restarted behind our back: %v", err)
	}
	t.Logf("HAProxy behind the API restarted (runtime state lost at once: %v): the truth served %v after", lost, time.Since(restarted).Round(10*time.Millisecond))

	// Behind our back again: an operator puts n1's server in maintenance
	// through the API's runtime endpoint. The resync (3 s here) sees it.
	c, err := dataplane.New(dataplane.Options{URL: api.URL, Username: "admin", Password: "pw-chaos", Timeout: 5 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	states, _ := api.Running(backend)
	for _, st := range states {
		if fmt.Sprintf("%s:%d", st.Address, st.Port) == node(1) {
			if err := c.SetRuntimeState(bg, backend, st.Name, "maint"); err != nil {
				t.Fatal(err)
			}
		}
	}
	if apiServes(1, 2, 3)() == nil {
		t.Fatal("the operator's change did not take")
	}
	drifted := time.Now()
	e.eventually("the resync puts n1 back", apiServes(1, 2, 3))
	t.Logf("a server put in maintenance behind our back: corrected %v after", time.Since(drifted).Round(10*time.Millisecond))
	e.eventually("HAProxy a still serves every node", instanceServes(port, "n1", "n2", "n3"))
}
