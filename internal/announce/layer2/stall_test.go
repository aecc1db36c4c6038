package layer2

import (
	"fmt"
	"net/netip"
	"os/exec"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/haproxy-k8s-sync/haproxy-k8s-sync/internal/testing/netlab"
)

// TestStalledProcessMovesNothing: the processes of the three hosts are
// stopped together for longer than the hold time (SIGSTOP, then SIGCONT
// 500 ms later, three times: what a paused machine, or hosts starved
// together, go through), and one of them is continued 300 ms after the
// two others (a starved machine schedules its processes again one by
// one). Nobody sent and nobody heard meanwhile, so nothing moves: each
// host counts the stall as its own deafness, not as its peers' silence,
// and allows each peer its own stall's measure until it hears it again
// (stall.go, announce.Node.Deaf). Before, the first decision after the
// stall found every peer silent and took its addresses; with the hold
// time alone after the stall, the host continued late lost its
// addresses at the first stop (4-13 moves, 3 of 3).
func TestStalledProcessMovesNothing(t *testing.T) {
	if _, err := exec.LookPath("sh"); err != nil {
		t.Skip("no sh to stop and continue this process")
	}
	extra := manyAddrs(6)
	g, moves := timedGroup(t, Config{}, extra...)
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
	var pids []string
	for _, p := range g.pids() {
		pids = append(pids, strconv.Itoa(p))
	}
	all3 := strings.Join(pids, " ")
	first := time.Now()
	for i := range 3 {
		// host i runs again 300 ms after the two others: hosts starved
		// together are scheduled again one by one
		var others []string
		for j, p := range pids {
			if j != i {
				others = append(others, p)
			}
		}
		stop := fmt.Sprintf("kill -STOP %s; sleep 0.5; kill -CONT %s; sleep 0.3; kill -CONT %s",
			all3, strings.Join(others, " "), pids[i])
		t0 := time.Now()
		if out, err := exec.Command("sh", "-c", stop).CombinedOutput(); err != nil {
			t.Fatalf("stall %d: %v: %s", i+1, err, out)
		}
		end := time.Now().Add(time.Second)
		for time.Now().Before(end) {
			if m := moves.since(t0); m != 0 {
				t.Fatalf("%d moves made after stall %d of 500 ms began, want none", m, i+1)
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
	if m := moves.since(first); m != 0 {
		t.Fatalf("%d moves made since the first stall began, heard late, want none", m)
	}
}

// TestStalledHolderMovesNothing: the three hosts' processes are stopped
// together once for 350 ms (the machine stalls everyone: nothing moves,
// TestStalledProcessMovesNothing), so each host has a stall of its own
// to tell (Heartbeat.Stall). Then the holder of the addresses alone is
// stopped for 350 ms, twice (the holder of the IPv4 address): longer than the hold time (300 ms), which
// made its peers take its addresses; they now allow a host its own told
// stalls (announce/stalls.go), and nothing moves. A frozen host that
// never stalled is still failed over after the hold time
// (BenchmarkFailover, TestFailoverManyAddresses).
func TestStalledHolderMovesNothing(t *testing.T) {
	if _, err := exec.LookPath("sh"); err != nil {
		t.Skip("no sh to stop and continue this process")
	}
	g, moves := timedGroup(t, Config{})
	all := []netip.Addr{vip4, vip6}
	var before map[netip.Addr]string
	if err := netlab.Eventually(t.Context(), 20*time.Second, func() (err error) {
		if before, err = g.owners(all); err != nil {
			return err
		}
		for _, h := range g.lbs {
			for a, o := range before {
				if v := g.view(h.Name); len(v[a]) != 1 || v[a][0] != o {
					return fmt.Errorf("%s says %s is held by %v, it is by %s", h.Name, a, v[a], o)
				}
			}
		}
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	holder := -1
	var all3 []string
	for i, p := range g.pids() {
		all3 = append(all3, strconv.Itoa(p))
		if g.lbs[i].Name == before[vip4] {
			holder = i
		}
	}
	stall := func(what string, pids ...string) {
		t.Helper()
		t0 := time.Now()
		ps := strings.Join(pids, " ")
		if out, err := exec.Command("sh", "-c", fmt.Sprintf("kill -STOP %s; sleep 0.35; kill -CONT %s", ps, ps)).CombinedOutput(); err != nil {
			t.Fatalf("%s: %v: %s", what, err, out)
		}
		end := time.Now().Add(1500 * time.Millisecond)
		for time.Now().Before(end) {
			if m := moves.since(t0); m != 0 {
				t.Fatalf("%d moves made after %s began, want none", m, what)
			}
			time.Sleep(50 * time.Millisecond) // the pace of the check, not a wait for an event
		}
	}
	stall("the three hosts stopped together for 350 ms", all3...)
	for i := range 2 {
		stall(fmt.Sprintf("the holder %s stopped alone for 350 ms (%d)", before[vip4], i+1), all3[holder])
	}
	after, err := g.owners(all)
	if err != nil {
		t.Fatal(err)
	}
	for a, h := range before {
		if after[a] != h {
			t.Fatalf("%s held by %s after the stalls, by %s before", a, after[a], h)
		}
	}
}
