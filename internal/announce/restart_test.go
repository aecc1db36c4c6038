package announce

import (
	"slices"
	"testing"
	"time"
)

// TestNodeRestart: a host that leaves for a restart (Leave) keeps its
// addresses in the others' view while it is away and while its new run,
// which adopts the last run's claims, is not healthy yet: nothing moves;
// a host that does not come back within the window loses them then, and
// one that stops without Leave (a crash) loses them after the hold time.
func TestNodeRestart(t *testing.T) {
	const window = 3 * time.Second
	cases := []struct {
		name  string
		leave bool
		back  bool // a new run adopts the claims, healthy after 1.5 s
		// moved: whether the victim's addresses moved, not before from
		// and by by (ticks after it stopped)
		moved    bool
		from, by int
	}{
		{"restart", true, true, false, 0, 0},
		{"left, not back", true, false, true, int(window/tick) - 1, int(window/tick) + 4},
		{"crash", false, false, true, 1, 4},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			s := newSim(t, addrs(6), "lb1", "lb2", "lb3")
			s.step(5)
			s.oneOwnerEach()
			victim := "lb2"
			n := s.nodes[victim]
			kept := n.Claims()
			if len(kept) == 0 {
				t.Fatalf("%s holds nothing", victim)
			}
			if tc.leave {
				n.Leave(window)
				s.step(1) // its last heartbeat
			}
			s.stopped[victim] = true
			before := s.moves
			others := func() []Claim {
				var out []Claim
				for _, name := range []string{"lb1", "lb3"} {
					for _, c := range s.nodes[name].Claims() {
						if slices.ContainsFunc(kept, func(k Claim) bool { return k.Addr == c.Addr }) {
							out = append(out, c)
						}
					}
				}
				return out
			}
			if tc.back {
				s.step(10) // away for a second
				s.start(victim)
				r := s.nodes[victim]
				r.Set(Want{Addrs: s.addrs}) // not healthy yet
				r.Adopt(kept, s.now.Add(window))
				s.step(15)
				if got := r.Claims(); !slices.Equal(got, kept) {
					t.Fatalf("the new run holds %v while not healthy, want %v", got, kept)
				}
				r.Set(Want{Addrs: s.addrs, Healthy: true})
				s.step(int(window/tick) + 5) // past the window
				if got := r.Claims(); !slices.Equal(got, kept) {
					t.Fatalf("the new run holds %v once healthy, want %v", got, kept)
				}
			}
			for k := 1; k <= int(window/tick)+10; k++ {
				s.step(1)
				if got := others(); !tc.moved && len(got) > 0 || tc.moved && k < tc.from && len(got) > 0 {
					t.Fatalf("%d ticks after %s stopped the others hold %v of its addresses", k, victim, got)
				}
				if tc.moved && len(others()) == len(kept) {
					if k > tc.by {
						t.Fatalf("its addresses moved %d ticks after it stopped, want by %d", k, tc.by)
					}
					return
				}
			}
			if tc.moved {
				t.Fatalf("its addresses did not move (others hold %v)", others())
			}
			if s.moves != before {
				t.Fatalf("%d takes across the restart, want none", s.moves-before)
			}
			s.oneOwnerEach()
		})
	}
}
