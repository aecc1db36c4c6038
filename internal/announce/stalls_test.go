package announce

import (
	"testing"
	"time"
)

// TestNodeAllowsToldStalls: lb1, holding addresses, stalls (its loop not
// run: it neither sends nor hears) and tells its peers so (Stalled, then
// Heartbeat.Stall); lb2 then counts lb1 gone only after the told stall's
// measure (max(hold, stall*3/2 + hold/3), at most MaxStallHold), not after
// the hold time: a later stall of that size moves nothing, while a frozen
// lb1 is still failed over, later by as much. A host that told no stall,
// or whose stall is older than StallMemory, is held to the hold time (the
// failover bound where hosts run on time); a heartbeat forged without
// the group's key tells nothing.
func TestNodeAllowsToldStalls(t *testing.T) {
	const told = 250 * time.Millisecond // allows 250*3/2 + 100 = 475 ms
	for _, tc := range []struct {
		name   string
		told   time.Duration // the stall lb1 had and tells (0: none)
		aged   bool          // StallMemory passes after it
		forged bool          // lb1's stall told only in heartbeats sealed with another key
		silent int           // ticks lb1 is then silent (frozen)
		back   bool          // lb1 runs again after them
		takeAt int           // the tick at which lb2 takes lb1's addresses (0: never)
	}{
		{"no stall told, frozen: the hold time", 0, false, false, 8, false, 4},
		{"no stall told, a 500 ms stall: taken", 0, false, false, 4, true, 4},
		{"a 250 ms stall told, a 500 ms stall: kept", told, false, false, 4, true, 0},
		{"a 250 ms stall told, frozen: taken after 475 ms", told, false, false, 8, false, 5},
		{"a 250 ms stall told long ago, a 500 ms stall: taken", told, true, false, 4, true, 4},
		{"a 5 s stall told, frozen: taken after MaxStallHold", 5 * time.Second, false, false, 30, false, 21},
		{"a 250 ms stall forged, a 500 ms stall: taken", told, false, true, 4, true, 4},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s := newSim(t, addrs(4), "lb1", "lb2")
			s.step(5)
			if load := s.oneOwnerEach(); load["lb1"] == 0 {
				t.Fatalf("load %v: lb1 holds nothing to lose", load)
			}
			if tc.told > 0 {
				lb1 := s.nodes["lb1"]
				lb1.Stalled(tc.told, s.now)
				if tc.forged {
					// lb1 knows its stall, but only a forger's heartbeats say it
					hb := lb1.Heartbeat()
					b, err := Seal(hb, []byte("another key"))
					if err != nil {
						t.Fatal(err)
					}
					if _, err := s.deliver("lb2", b); err == nil {
						t.Fatal("a heartbeat sealed with another key was taken")
					}
					lb1.stalls = stalls{}
				}
				s.step(2)
			}
			if tc.aged {
				for range 2 {
					s.now = s.now.Add(StallMemory / 2)
					s.nodes["lb1"].Decide(s.now)
					s.nodes["lb2"].Deaf(StallMemory / 2) // nobody runs meanwhile: no silence counted
				}
				s.step(2)
				if got := s.nodes["lb1"].Stall(s.now); got != 0 {
					t.Fatalf("lb1 tells a stall of %v after StallMemory, want none", got)
				}
			}
			s.moves = 0
			s.stopped["lb1"] = true
			takeAt := s.firstMove(tc.silent, nil)
			if takeAt != tc.takeAt {
				t.Fatalf("lb2 took lb1's addresses at tick %d of lb1's silence, want %d (0: never; allowed %v)",
					takeAt, tc.takeAt, s.nodes["lb2"].StallHold("lb1"))
			}
			if tc.back {
				s.stopped["lb1"] = false
				s.step(3)
				s.oneOwnerEach()
			}
		})
	}
}

// TestStallsRemembered: the longest stall is told for at least half of
// StallMemory and at most StallMemory after it.
func TestStallsRemembered(t *testing.T) {
	t0 := time.Unix(1000, 0)
	n := NewNode("lb1", hold, t0)
	n.Stalled(200*time.Millisecond, t0)
	n.Stalled(400*time.Millisecond, t0.Add(time.Minute))
	n.Stalled(300*time.Millisecond, t0.Add(2*time.Minute))
	for _, tc := range []struct {
		at   time.Duration
		want time.Duration
	}{
		{2 * time.Minute, 400 * time.Millisecond},
		{StallMemory/2 + time.Minute, 400 * time.Millisecond},
		{StallMemory - time.Second, 400 * time.Millisecond},
		{StallMemory, 0},
	} {
		if got := n.Stall(t0.Add(tc.at)); got != tc.want {
			t.Errorf("at +%v: stall %v, want %v", tc.at, got, tc.want)
		}
	}
}
