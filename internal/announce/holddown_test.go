package announce

import (
	"net/netip"
	"testing"
	"time"
)

// TestNodeFlappingHost: a host that flaps (its gate failing and passing,
// or cut off from the others and back, every half second) for ten
// seconds, with a hold-down of two seconds: each address it held moves
// once, to a steady host, and never again; addresses new during the
// flapping go to the steady hosts and never move; the flapping host
// holds nothing at the end, every address has one owner. Without the
// hold-down the new addresses go to the flapping host (it holds the
// fewest) and move at its next flap.
func TestNodeFlappingHost(t *testing.T) {
	const victim = "lb1"
	cases := []struct {
		name     string
		down, up func(s *sim)
	}{
		{"gate", func(s *sim) { s.nodes[victim].Set(Want{Addrs: s.addrs}) },
			func(s *sim) { s.nodes[victim].Set(Want{Addrs: s.addrs, Healthy: true}) }},
		{"cut off", func(s *sim) { s.cut[[2]string{victim, "lb2"}], s.cut[[2]string{victim, "lb3"}] = true, true },
			func(s *sim) { clear(s.cut) }},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			all := addrs(12)
			s := &sim{t: t, now: time.Unix(1000, 0), nodes: map[string]*Node{}, names: []string{"lb1", "lb2", "lb3"},
				stopped: map[string]bool{}, cut: map[[2]string]bool{}, addrs: all[:6], holdDown: 20 * tick}
			for _, n := range s.names {
				s.start(n)
			}
			s.step(25) // settled, and past the hold-down of the start
			s.oneOwnerEach()
			had := s.nodes[victim].Holds()
			if len(had) == 0 {
				t.Fatalf("%s holds nothing before the flapping", victim)
			}
			// owner changes per address: a new single owner where another was
			last, changes := map[netip.Addr]string{}, map[netip.Addr]int{}
			watch := func(k int) {
				for range k {
					s.step(1)
					own := s.owners()
					for _, a := range s.addrs {
						if len(own[a]) != 1 {
							continue
						}
						if l, ok := last[a]; ok && l != own[a][0] {
							changes[a]++
						}
						last[a] = own[a][0]
					}
				}
			}
			watch(1)
			isNew := map[netip.Addr]bool{}
			for cycle := range 10 {
				tc.down(s)
				watch(5)
				tc.up(s)
				if cycle%3 == 1 { // two new addresses while the victim is back
					for _, a := range all[len(s.addrs) : len(s.addrs)+2] {
						isNew[a] = true
					}
					s.addrs = all[:len(s.addrs)+2]
					for _, n := range s.names {
						w := Want{Addrs: s.addrs, Healthy: s.nodes[n].want.Healthy || n == victim}
						s.nodes[n].Set(w)
					}
				}
				watch(5)
			}
			watch(5)
			s.oneOwnerEach(victim)
			for _, a := range s.addrs {
				limit := 0
				if !isNew[a] && contains(had, a) {
					limit = 1
				}
				if changes[a] > limit {
					t.Errorf("%s (new %v, the victim's %v) changed owner %d times, want at most %d", a, isNew[a], contains(had, a), changes[a], limit)
				}
			}
			if len(isNew) != 6 {
				t.Fatalf("%d new addresses, want 6", len(isNew))
			}
		})
	}
}

func contains(as []netip.Addr, a netip.Addr) bool {
	for _, x := range as {
		if x == a {
			return true
		}
	}
	return false
}
