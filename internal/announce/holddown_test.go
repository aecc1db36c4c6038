package announce

import (
	"fmt"
	"net/netip"
	"slices"
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

// TestNodeReturnedHostListensFirst: the owner of an address fails and
// another host takes the address; then the owner is healthy again
// before it heard that taking, and alone with its own view it would
// take the address back at once (term for term and support for support
// the rank then decides: TestLinkDown in layer2 saw it moved back). It
// listens one hold time first: it never takes anything, not for one
// Decide, and the address stays with the host that took it, with or
// without a hold-down. The faults: its link lost its carrier (cut off
// and unhealthy at once: it says nothing and hears nothing), the taking
// from the silent holder with a witness (support 2) or with the third
// host silent too (support 1); and its gate failing for one heartbeat
// (it hears the others all along, but their takings only a heartbeat
// later).
func TestNodeReturnedHostListensFirst(t *testing.T) {
	groups := []struct {
		name     string
		holdDown time.Duration
		settle   int // ticks before the fault
	}{
		{"no hold-down", 0, 5},
		{"all within the start's hold-down", 100 * tick, 5},
		{"all past the start's hold-down", 20 * tick, 25},
	}
	faults := []struct {
		name    string
		ticks   int // from the fault to the return
		support int // of the taking (0: not checked)
		silent  bool
	}{
		{"link down, a witness", 5, 2, false},
		{"link down, the witness silent too", 5, 1, true},
		{"gate failed for one heartbeat", 1, 0, false},
	}
	for _, g := range groups {
		for _, f := range faults {
			t.Run(g.name+"/"+f.name, func(t *testing.T) {
				s := newSimHoldDown(t, g.holdDown)
				s.step(g.settle)
				s.oneOwnerEach()
				a := s.addrs[0]
				victim := s.owners()[a][0]
				others := slices.DeleteFunc(slices.Clone(s.names), func(n string) bool { return n == victim })
				if f.ticks > 1 {
					for _, o := range others {
						s.cut[[2]string{victim, o}] = true
					}
				}
				s.nodes[victim].Set(Want{Addrs: s.addrs})
				s.stopped[others[1]] = f.silent
				s.step(f.ticks)
				own := s.owners()[a]
				if len(own) != 1 || own[0] == victim {
					t.Fatalf("%s held by %v after %s's fault", a, own, victim)
				}
				taker := own[0]
				if got := s.nodes[taker].claims[a].Support; f.support > 0 && got != f.support {
					t.Fatalf("%s took %s with support %d, want %d", taker, a, got, f.support)
				}
				// healthy again, before hearing the taking
				clear(s.cut)
				s.nodes[victim].Set(Want{Addrs: s.addrs, Healthy: true})
				if ch := s.nodes[victim].Decide(s.now); len(ch.Take) != 0 {
					t.Fatalf("%s took %v on its return, before hearing the takings", victim, ch.Take)
				}
				moves := s.moves
				for i := range 10 {
					s.step(1)
					if got := s.nodes[victim].Holds(); len(got) != 0 {
						t.Fatalf("%s holds %v %d ticks after its return", victim, got, i+1)
					}
				}
				if s.moves != moves {
					t.Fatalf("%d takes after %s returned, want none", s.moves-moves, victim)
				}
				if own := s.owners()[a]; len(own) != 1 || own[0] != taker {
					t.Fatalf("%s held by %v at the end, want %s", a, own, taker)
				}
				s.oneOwnerEach(victim)
			})
		}
	}
}

// TestNodeReturnedHostTakesWhatItHeardHeld: a host healthy again
// listens only for the addresses whose takings it may have missed: one
// it heard a peer claim since its health fell it takes at once when
// that holder fails and it is given the address (no steady host: it
// holds the fewest). The failover right after its return takes one
// heartbeat, as for any unhealthy owner (`make failover`'s back-to-back
// unhealthy trials: a listening of the whole hold time made them 250 to
// 300 ms).
func TestNodeReturnedHostTakesWhatItHeardHeld(t *testing.T) {
	for _, holdDown := range []time.Duration{0, 100 * tick} {
		t.Run(fmt.Sprintf("hold-down %v", holdDown), func(t *testing.T) {
			s := newSimHoldDown(t, holdDown)
			s.step(5)
			s.oneOwnerEach()
			first := s.owners()[s.addrs[0]][0]
			s.nodes[first].Set(Want{Addrs: s.addrs})
			s.step(2) // the takings heard
			s.oneOwnerEach(first)
			s.nodes[first].Set(Want{Addrs: s.addrs, Healthy: true})
			if ch := s.nodes[first].Decide(s.now); !ch.Empty() {
				t.Fatalf("%s changed %+v on its return, all held by the others", first, ch)
			}
			second := s.owners()[s.addrs[0]][0]
			had := s.nodes[second].Holds()
			s.nodes[second].Set(Want{Addrs: s.addrs})
			s.step(1)
			own := s.owners()
			for _, a := range had {
				if len(own[a]) != 1 || own[a][0] == second {
					t.Fatalf("%s held by %v one tick after %s turned unhealthy (%s healthy again just before)", a, own[a], second, first)
				}
			}
			if got := s.nodes[first].Holds(); len(got) == 0 {
				t.Fatalf("%s, healthy again and holding the fewest, was given none of %v", first, had)
			}
		})
	}
}

// newSimHoldDown is three hosts serving six addresses, each with the
// hold-down d.
func newSimHoldDown(t *testing.T, d time.Duration) *sim {
	s := &sim{t: t, now: time.Unix(1000, 0), nodes: map[string]*Node{}, names: []string{"lb1", "lb2", "lb3"},
		stopped: map[string]bool{}, cut: map[[2]string]bool{}, addrs: addrs(6), holdDown: d}
	for _, n := range s.names {
		s.start(n)
	}
	return s
}
