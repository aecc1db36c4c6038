package e2e

import (
	"fmt"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/haproxy-k8s-sync/haproxy-k8s-sync/internal/testing/nodes"
)

// chartOutage is the apiserver stopped under the chart's Pods: for
// outage nothing moves (holder keeps addr alone, polled every 100 ms);
// then holder's HAProxy is killed, still without an apiserver, and the
// other node must take addr and a client on the underlay be answered
// through it within bound. The apiserver is started again after.
func chartOutage(t *testing.T, tier *nodes.Tier, pods map[string]string, addr, vip string, holder *nodes.Node, outage, bound time.Duration) {
	t.Helper()
	// The apiserver stopped, the controllers' logs from the nodes.
	defer func() {
		if t.Failed() {
			for _, n := range tier.Nodes {
				t.Log(n.ContainerLog(chartNS, pods[n.Name], "sync", 40))
			}
			t.Log(announcerLog(tier, pods))
		}
	}()
	tier.Kube.StopAPIServer()
	defer func() {
		if err := tier.Kube.StartAPIServer(); err != nil {
			t.Errorf("the apiserver again: %v", err)
		}
	}()
	stopped := time.Now()
	for i := 0; time.Since(stopped) < outage && i < int(outage/(100*time.Millisecond))+1; i++ {
		if held := holders(t, tier, addr); len(held) != 1 || held[0] != holder {
			t.Fatalf("%s after the apiserver stopped: %s held by %v, want %s alone", time.Since(stopped).Round(time.Millisecond), addr, nodeNames(held), holder.Name)
		}
		time.Sleep(100 * time.Millisecond) // the pace of the checks, not a wait for anything
	}
	killed, err := killHAProxy(holder)
	if err != nil {
		t.Fatal(err)
	}
	hit := time.Now()
	var served time.Duration
	err = waitUntil(bound+5*time.Second, func() error {
		held := holders(t, tier, addr)
		if len(held) != 1 || held[0] == holder {
			return fmt.Errorf("%s held by %v", addr, nodeNames(held))
		}
		if _, err := clientHostname(tier, vip); err != nil {
			return err
		}
		served = time.Since(hit)
		return nil
	})
	if err != nil {
		t.Fatalf("the apiserver stopped for %s, %s's HAProxy killed (%d processes): %v", outage, holder.Name, killed, err)
	}
	t.Logf("the apiserver stopped for %s: %s kept by %s; its HAProxy killed then: answered through the other node %s later",
		outage, addr, holder.Name, served.Round(time.Millisecond))
	// the stalls each controller had and told its peer (what the hold
	// allowed for; docs/addresses.md)
	t.Log(announcerLog(tier, pods, "the announcer"))
	if served > bound {
		t.Errorf("failover during the apiserver outage took %s, bound %s", served.Round(time.Millisecond), bound)
	}
}

// killHAProxy kills (SIGKILL) every haproxy process in node n's network
// namespace: the chart's HAProxy container on that node, master and
// workers, which the test's own Pod runs.
func killHAProxy(n *nodes.Node) (int, error) {
	dirs, err := procsInNS(n, func(argv [][]byte) bool { return filepath.Base(string(argv[0])) == "haproxy" })
	if err != nil {
		return 0, err
	}
	killed := 0
	for _, d := range dirs {
		pid, err := strconv.Atoi(filepath.Base(d))
		if err == nil && syscall.Kill(pid, syscall.SIGKILL) == nil {
			killed++
		}
	}
	if killed == 0 {
		return 0, fmt.Errorf("no haproxy process in %s", n.NS)
	}
	return killed, nil
}

// announcerMarks pick the announcer's own lines out of a controller's log:
// the health gate's verdicts, the addresses taken, released and moved, the
// carrier, a late step, a restart's kept or adopted addresses.
var announcerMarks = []string{"health gate", "address ", "addresses ", "link carrier", "the announcer", "adopted"}

// announcerLog is the announcer's lines of each node's controller (the
// chart's sync container) in pods, node by node, at most 80 each: what a
// failed hand-over or outage is read from (the whole log is gone with the
// tier). With marks, only the lines holding one of those.
func announcerLog(tier *nodes.Tier, pods map[string]string, marks ...string) string {
	if len(marks) == 0 {
		marks = announcerMarks
	}
	var b strings.Builder
	for _, n := range tier.Nodes {
		if pods[n.Name] == "" {
			continue
		}
		var lines []string
		for _, l := range strings.Split(n.ContainerLog(chartNS, pods[n.Name], "sync", 1<<20), "\n") {
			for _, m := range marks {
				if strings.Contains(l, m) {
					lines = append(lines, l)
					break
				}
			}
		}
		fmt.Fprintf(&b, "--- %s (%s): the announcer's lines, %d ---\n", n.Name, pods[n.Name], len(lines))
		b.WriteString(strings.Join(lines[max(0, len(lines)-80):], "\n"))
		b.WriteString("\n")
	}
	return b.String()
}
