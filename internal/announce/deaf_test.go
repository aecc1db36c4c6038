package announce

import (
	"errors"
	"slices"
	"testing"
	"time"
)

// TestNodeDeaf: every host stalled for longer than the hold time (one
// process, or one machine, not scheduled: nobody sent, nobody heard).
// A node told how long it was deaf takes nothing from the peer it holds
// no news of, nor from one that comes back some ticks after it (hosts
// starved together are scheduled again one by one: the peer is allowed
// this host's stall as if it had told it, stalls.go), and still finds a
// peer that really died once that allowance has passed after the stall;
// a node not told, or told less, takes the peer's addresses at the first
// decision after the stall.
func TestNodeDeaf(t *testing.T) {
	const stall = 5 * tick
	// a peer told this stall may be silent 850 ms: gone at the 9th tick
	deadAt := int(AllowedSilence(hold, stall)/tick) + 1
	for _, tc := range []struct {
		name     string
		deaf     time.Duration // what lb2 is told
		late     int           // ticks lb1 stays stopped after lb2 runs again (-1: it never runs again)
		takesNow bool          // lb2 takes lb1's addresses at the first decision
		takesAt  int           // the tick after the stall at which it takes them (0: never)
	}{
		{"told, the peer back", stall, 0, false, 0},
		{"told, the peer back 4 ticks later", stall, 4, false, 0},
		{"told, the peer back 7 ticks later", stall, 7, false, 0},
		{"told, the peer dead", stall, -1, false, deadAt},
		{"not told", 0, 0, true, 0},
		{"told less than the stall", tick, 0, true, 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s := newSim(t, addrs(4), "lb1", "lb2")
			s.step(5)
			if load := s.oneOwnerEach(); load["lb1"] == 0 {
				t.Fatalf("load %v: lb1 holds nothing to lose", load)
			}
			s.moves = 0
			s.now = s.now.Add(stall) // nobody runs
			s.nodes["lb2"].Deaf(tc.deaf)
			if took := len(s.nodes["lb2"].Decide(s.now).Take) > 0; took != tc.takesNow {
				t.Fatalf("lb2 took lb1's addresses at the first decision after the stall: %v, want %v", took, tc.takesNow)
			}
			if tc.takesNow {
				return
			}
			stopped := true // lb1 did not run in the stall either
			takesAt := s.firstMove(deadAt+int(hold/tick), func(i int) {
				back := tc.late >= 0 && i > tc.late
				if back && stopped {
					// lb1 runs again, deaf for as long as it was stopped
					s.nodes["lb1"].Deaf(stall + time.Duration(i-1)*tick)
				}
				stopped = !back
				s.stopped["lb1"] = stopped
			})
			if takesAt != tc.takesAt {
				t.Fatalf("lb2 took lb1's addresses at tick %d after the stall, want %d (0: never; allowed %v)",
					takesAt, tc.takesAt, s.nodes["lb2"].StallHold("lb1"))
			}
			load := s.oneOwnerEach()
			if tc.late < 0 && load["lb2"] != len(s.addrs) {
				t.Fatalf("load %v, lb1 dead: want all on lb2", load)
			}
		})
	}
}

// TestNodeHealAfterStall: lb1 is cut off and takes every address alone
// (support 1, newer terms); meanwhile lb3 stalls for longer than the
// hold, so lb2 hears no live peer and its holds' support falls to 1. When
// lb3 says it stalled (Heartbeat.Deaf, covering its silence), lb2 counts
// that silence no more, and at the heal lb2 and lb3 keep what they held
// (one owner each within one heartbeat). A stall said too short for the
// silence, or a heartbeat forged without the group's key, raises nothing:
// lb2 loses its addresses to lb1 at the heal as before.
func TestNodeHealAfterStall(t *testing.T) {
	const stall = 4 * tick
	for _, tc := range []struct {
		name   string
		deaf   time.Duration // what lb3 is told at its return
		forged bool          // a heartbeat saying lb3 was deaf, sealed with another key, reaches lb2
		kept   bool          // lb2 keeps its addresses at the heal
	}{
		{"lb3 says its stall", stall, false, true},
		{"lb3 says too short a stall", tick / 2, false, false},
		{"lb3 says nothing, a forged deaf", 0, true, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s := newSim(t, addrs(6), "lb1", "lb2", "lb3")
			s.step(5)
			s.oneOwnerEach()
			before := s.owners()
			s.cut[[2]string{"lb1", "lb2"}], s.cut[[2]string{"lb1", "lb3"}] = true, true
			s.step(5)
			s.stopped["lb3"] = true
			s.step(int(stall / tick))
			delete(s.stopped, "lb3")
			s.nodes["lb3"].Deaf(tc.deaf)
			if tc.forged {
				hb := s.nodes["lb3"].Heartbeat()
				hb.Seq += 100
				hb.Deaf = stall.Milliseconds()
				b, err := Seal(hb, []byte("not the group's key"))
				if err != nil {
					t.Fatal(err)
				}
				held := s.nodes["lb2"].Claims()
				if _, err := s.deliver("lb2", b); !errors.Is(err, ErrBadMAC) {
					t.Fatalf("forged heartbeat: %v, want ErrBadMAC", err)
				}
				if got := s.nodes["lb2"].Claims(); !slices.Equal(got, held) {
					t.Fatalf("a forged heartbeat changed lb2's holds: %v, was %v", got, held)
				}
			}
			s.step(3)
			clear(s.cut)
			s.step(1)
			s.oneOwnerEach()
			for a, o := range before {
				if o[0] == "lb1" {
					continue
				}
				if kept := s.owners()[a][0] == o[0]; kept != (tc.kept || o[0] == "lb3") {
					t.Errorf("%s: held by %v after the heal, by %s before the cut", a, s.owners()[a], o[0])
				}
			}
		})
	}
}

// TestNodeHealHeardOneByOne: lb1 is cut off for just over the hold time
// and hears lb3 again before lb2 (TestFailoverKeepsConnections on a
// loaded machine: lb2's next heartbeat was still to come). lb3, heard
// again only after a silence (even one within the hold time: its cut
// began a little later), does not count as support for taking lb2's
// addresses: lb1 takes them with support 1 at most, loses them to lb2
// once it hears it, and lb2 keeps them.
func TestNodeHealHeardOneByOne(t *testing.T) {
	for _, tc := range []struct {
		name string
		lag  int // ticks between the cut from lb2 and the cut from lb3
	}{
		{"both cut at once", 0},
		{"lb3 cut a tick later: its silence within the hold", 1},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s := newSim(t, addrs(6), "lb1", "lb2", "lb3")
			s.step(5)
			s.oneOwnerEach()
			before := s.owners()
			s.cut[[2]string{"lb1", "lb2"}] = true
			s.step(tc.lag)
			s.cut[[2]string{"lb1", "lb3"}] = true
			s.step(int(hold/tick) - tc.lag)
			delete(s.cut, [2]string{"lb1", "lb3"})
			s.step(1)
			for _, c := range s.nodes["lb1"].Claims() {
				if before[c.Addr][0] == "lb2" && c.Support > 1 {
					t.Errorf("lb1 took lb2's %s with support %d, hearing lb3 again alone", c.Addr, c.Support)
				}
			}
			clear(s.cut)
			s.step(1)
			s.oneOwnerEach()
			for a, o := range before {
				if o[0] == "lb2" && s.owners()[a][0] != "lb2" {
					t.Errorf("%s moved from lb2 (stayed up) to %v", a, s.owners()[a])
				}
			}
		})
	}
}
