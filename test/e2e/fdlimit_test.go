package e2e

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"

	"golang.org/x/sys/unix"

	"github.com/haproxy-k8s-sync/haproxy-k8s-sync/internal/haproxy/haproxytest"
	"github.com/haproxy-k8s-sync/haproxy-k8s-sync/internal/testing/lab"
)

// Issue 35 through the controller: HAProxy's master may have only a few
// more open files than the running configuration needs (its hard limit
// lowered, as a unit's LimitNOFILE would). Forty more Services need more:
// the controller does not reload into HAProxy's refusal (no failed
// reload, the last Service never on disk), puts a Warning Event
// FileDescriptorLimit on the Services that wait, logs what it needs, the
// limit and the way out, and the Service already served still is.
func TestFileDescriptorLimitRefusedBeforeReload(t *testing.T) {
	e := newEnv(t)
	np := nodePort()
	e.addNode("n1", 1, true, np)
	port := int32(haproxytest.FreePort(t))
	e.createService(lab.Service{Namespace: ns, Name: "good", Port: port, NodePort: np})
	e.startController()
	e.eventually("good serves", serves(port, "n1"))
	// The new worker serves before the controller has confirmed its
	// reload (on 2.6 by polling the master's `show proc`): a limit
	// lowered under the master meanwhile kept that confirmation from
	// ending for 20 s once, and the Services waited behind it.
	e.eventually("the controller's reload confirmed", func() error {
		if !strings.Contains(e.ctlLog.String(), `msg="reload ended"`) {
			return fmt.Errorf("no reload ended in the controller's log yet")
		}
		return nil
	})

	need := haproxyNeed(t, e.config())
	limit := uint64(need + 10)
	if err := unix.Prlimit(e.hap.MasterPID(), unix.RLIMIT_NOFILE, &unix.Rlimit{Cur: limit, Max: limit}, nil); err != nil {
		t.Skipf("cannot lower HAProxy's open-file limit: %v", err)
	}
	t.Logf("the running configuration needs %d open files; HAProxy's limit now %d", need, limit)
	// A pass that holds only the first few may still fit and reload;
	// every pass that holds the last one does not.
	for i := range 40 {
		e.createService(lab.Service{Namespace: ns, Name: fmt.Sprintf("more-%d", i), Port: int32(haproxytest.FreePort(t))})
	}
	e.eventually("a Warning Event FileDescriptorLimit on the last Service", e.event("more-39", "FileDescriptorLimit"))
	p, err := e.master.ShowProc(bg)
	if err != nil {
		t.Fatal(err)
	}
	if p.Failed != 0 {
		t.Errorf("%d failed reloads: want none tried into HAProxy's refusal", p.Failed)
	}
	if strings.Contains(e.config(), "fe_"+ns+"_more-39_") {
		t.Errorf("the refused frontend is on disk")
	}
	log := e.ctlLog.String()
	for _, want := range []string{"needs more open files than HAProxy may have", fmt.Sprintf("HAProxy may have %d", limit), "LimitNOFILE", "--global-maxconn"} {
		if !strings.Contains(log, want) {
			t.Errorf("the controller's log does not say %q", want)
		}
	}
	if err := serves(port, "n1")(); err != nil {
		t.Errorf("good stopped serving: %v", err)
	}
}

// haproxyNeed is the open files HAProxy needs for the configuration text
// cfg, by its own count: a copy started under a limit too low for it says
// (its stats socket moved aside; it stops before binding anything).
func haproxyNeed(t *testing.T, cfg string) int {
	t.Helper()
	dir := t.TempDir()
	cfg = regexp.MustCompile(`(?m)^(\s*stats socket )\S+`).ReplaceAllString(cfg, "${1}"+filepath.Join(dir, "stats.sock"))
	path := filepath.Join(dir, "haproxy.cfg")
	if err := os.WriteFile(path, []byte(cfg), 0o644); err != nil {
		t.Fatal(err)
	}
	out, _ := exec.Command("sh", "-c", `ulimit -n 40 && exec "$0" "$@"`, haproxytest.Bin(), "-W", "-S", filepath.Join(dir, "master.sock"), "-f", path).CombinedOutput()
	m := regexp.MustCompile(`Cannot raise FD limit to (\d+),`).FindSubmatch(out)
	if m == nil {
		t.Fatalf("HAProxy did not say what it needs:\n%s", out)
	}
	n, _ := strconv.Atoi(string(m[1]))
	return n
}
