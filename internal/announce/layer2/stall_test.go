package layer2

import (
	"fmt"
	"net/netip"
	"os/exec"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/haproxy-k8s-sync/haproxy-k8s-sync/internal/announce"
	"github.com/haproxy-k8s-sync/haproxy-k8s-sync/internal/testing/netlab"
)

// TestStalledProcessMovesNothing: the processes of the three hosts are
// stopped together for longer than the hold time (SIGSTOP, then SIGCONT
// 500 ms later, three times: what a paused machine, or hosts starved
// together, go through). Nobody sent and nobody heard meanwhile, so nothing
// moves: each host counts the stall as its own deafness, not as its
// peers' silence (stall.go). Before, the first decision after the stall
// found every peer silent and took its addresses.
func TestStalledProcessMovesNothing(t *testing.T) {
	if _, err := exec.LookPath("sh"); err != nil {
		t.Skip("no sh to stop and continue this process")
	}
	var moves atomic.Int64
	cfg := Config{OnMove: func(m announce.Move) {
		if len(m.From) > 0 {
			moves.Add(1)
		}
	}}
	extra := manyAddrs(6)
	g := newGroup(t, cfg, extra...)
	all := append([]netip.Addr{vip4, vip6}, extra...)
	owners := func() (map[netip.Addr]string, error) { return g.owners(all) }
	// settled: one holder of each, and every host's view says so (the
	// views' first changes, from nobody, are no moves)
	var before map[netip.Addr]string
	if err := netlab.Eventually(t.Context(), 20*time.Second, func() (err error) {
		if before, err = owners(); err != nil {
			return err
		}
		for _, h := range g.lbs {
			v := g.view(h.Name)
			for a, o := range before {
				if len(v[a]) != 1 || v[a][0] != o {
					return fmt.Errorf("%s says %s is held by %v, it is by %s", h.Name, a, v[a], o)
				}
			}
		}
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	m0 := moves.Load()
	var pids []string
	for _, p := range g.pids() {
		pids = append(pids, strconv.Itoa(p))
	}
	all3 := strings.Join(pids, " ")
	for i := range 3 {
		stop := fmt.Sprintf("kill -STOP %s; sleep 0.5; kill -CONT %s", all3, all3)
		if out, err := exec.Command("sh", "-c", stop).CombinedOutput(); err != nil {
			t.Fatalf("stall %d: %v: %s", i+1, err, out)
		}
		end := time.Now().Add(time.Second)
		for time.Now().Before(end) {
			if m := moves.Load() - m0; m != 0 {
				t.Fatalf("%d moves heard after stall %d of 500 ms, want none", m, i+1)
			}
			time.Sleep(50 * time.Millisecond) // the pace of the check, not a wait for an event
		}
	}
	after, err := owners()
	if err != nil {
		t.Fatal(err)
	}
	for a, h := range before {
		if after[a] != h {
			t.Fatalf("%s held by %s after the stalls, by %s before", a, after[a], h)
		}
	}
}
