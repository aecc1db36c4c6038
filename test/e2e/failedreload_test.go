package e2e

import (
	"fmt"
	"strings"
	"testing"

	"github.com/haproxy-k8s-sync/haproxy-k8s-sync/internal/haproxy/haproxytest"
	"github.com/haproxy-k8s-sync/haproxy-k8s-sync/internal/testing/lab"
)

// A reload HAProxy refuses, through the controller, now that no
// `haproxy -c` runs before it (issue 29: the master's parse is the one
// check): every Service also binds 192.0.2.55 (TEST-NET-1, an address this
// host does not have, without transparent), so the master fails the
// reload (show proc [failed: N]), the old worker keeps serving, and the
// controller puts the previous file back: the file on disk is the one that
// runs, and it says why in its log.
func TestFailedReloadKeepsPreviousFile(t *testing.T) {
	e := newEnv(t)
	np := nodePort()
	e.addNode("n1", 1, true, np)
	before := e.config()
	// Per-port binds (the suite may run in tproxy mode, where a Service
	// binds nothing: HKS_E2E_LISTENERS).
	e.startController("--listeners=ports", "--bind-address", "192.0.2.55")
	e.createService(lab.Service{Namespace: ns, Name: "web", Port: int32(haproxytest.FreePort(t)), NodePort: np})
	e.eventually("a failed reload", func() error {
		p, err := e.master.ShowProc(bg)
		if err != nil {
			return err
		}
		if p.Failed == 0 {
			return fmt.Errorf("no failed reload yet (%d reloads)", p.Reloads)
		}
		return nil
	})
	e.eventually("the previous file back on disk", func() error {
		if got := e.config(); got != before {
			return fmt.Errorf("the config on disk is not the one that runs:\n%s", got)
		}
		return nil
	})
	// The driver puts the file back before the pass returns, and the loop
	// logs the pass after that: wait for the line, which says why (the
	// address HAProxy could not bind: its own alert on 2.7+, the driver's
	// explanation on 2.6, runtimeapi explain.go).
	e.eventually("the failed reload and its reason in the controller's log", func() error {
		if log := e.ctlLog.String(); !strings.Contains(log, "reload") || !strings.Contains(log, "err=") ||
			!strings.Contains(log, "192.0.2.55:") {
			return fmt.Errorf("the controller's log does not report the failed reload and why:\n%s", log)
		}
		return nil
	})
	// The old worker still answers with the structure it runs.
	info, err := e.runtime.ShowInfo(bg)
	if err != nil {
		t.Fatal(err)
	}
	if d := info["description"]; d == "" || !strings.Contains(before, "description "+d+"\n") {
		t.Errorf("the running worker reports %q, not the previous file's", d)
	}
}
