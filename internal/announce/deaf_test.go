package announce

import (
	"testing"
	"time"
)

// TestNodeDeaf: every host stalled for longer than the hold time (one
// process, or one machine, not scheduled: nobody sent, nobody heard).
// A node told how long it was deaf takes nothing from the peer it holds
// no news of, and still finds a peer that really died once the hold
// time has passed after the stall; a node not told, or told less, takes
// the peer's addresses at the first decision after the stall.
func TestNodeDeaf(t *testing.T) {
	const stall = 5 * tick
	for _, tc := range []struct {
		name     string
		deaf     time.Duration // what lb2 is told
		lb1Dead  bool          // lb1 never sends again
		takesNow bool          // lb2 takes lb1's addresses at the first decision
	}{
		{"told, the peer back", stall, false, false},
		{"told, the peer dead", stall, true, false},
		{"not told", 0, false, true},
		{"told less than the stall", tick, false, true},
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
			s.stopped["lb1"] = tc.lb1Dead
			s.step(int(hold/tick) + 1)
			load := s.oneOwnerEach()
			switch {
			case tc.lb1Dead && load["lb2"] != len(s.addrs):
				t.Fatalf("load %v a hold time after the stall, lb1 dead: want all on lb2", load)
			case !tc.lb1Dead && s.moves != 0:
				t.Fatalf("%d moves after the stall, lb1 back: want none", s.moves)
			}
		})
	}
}
