package announce

import (
	"errors"
	"fmt"
	"net/netip"
	"slices"
	"testing"
	"time"
)

// TestNodeCutWithWitness: lb1 and lb2 cut from each other while lb3
// hears both (issue 31's partition between two hosts). Each heartbeat
// names the peers its sender hears, so lb1 knows lb2 is alive on lb3's
// side and takes nothing of lb2's (nor lb2 of lb1's): one holder per
// address for the whole cut, and nothing moves when it heals. The other
// cases are what the witness must not change or cannot do.
func TestNodeCutWithWitness(t *testing.T) {
	cases := []struct {
		name  string
		hosts []string
		old   []string // hosts sending no Hears (an older version)
		// during: after the cut, what happens to lb2 (nil: nothing)
		during func(s *sim)
		// each, when set, is called at each tick of the cut
		each  func(s *sim, i int)
		ticks int
		// twoHolders: some address is held twice at the end of the cut
		// (none may be, otherwise); moves: takes during the cut
		twoHolders bool
		moves      bool
	}{
		{name: "a witness hears both: nothing moves", hosts: []string{"lb1", "lb2", "lb3"}, ticks: 20},
		{name: "the holder fails during the cut: its addresses move once", hosts: []string{"lb1", "lb2", "lb3"},
			during: func(s *sim) { s.stopped["lb2"] = true }, ticks: 6, moves: true},
		{name: "the holder turns unhealthy during the cut", hosts: []string{"lb1", "lb2", "lb3"},
			during: func(s *sim) { s.nodes["lb2"].Set(Want{Addrs: s.addrs}) }, ticks: 6, moves: true},
		{name: "an older witness (no Hears): two holders, as before", hosts: []string{"lb1", "lb2", "lb3"},
			old: []string{"lb3"}, ticks: 10, twoHolders: true, moves: true},
		{name: "two hosts alone: no witness, both hold", hosts: []string{"lb1", "lb2"},
			ticks: 10, twoHolders: true, moves: true},
		{name: "new addresses appear during the cut: each taken once", hosts: []string{"lb1", "lb2", "lb3"},
			during: func(s *sim) { s.want(addrs(12)[6:]...) }, ticks: 20, moves: true},
		{name: "new addresses appear one a tick during the cut: each taken once", hosts: []string{"lb1", "lb2", "lb3"},
			each: func(s *sim, i int) {
				if i < 6 {
					s.want(addrs(12)[6+i])
				}
			}, ticks: 20, moves: true},
		// lb1 holds lb2's claims as last heard, so an address lb2 took
		// during the cut is free in lb1's view; in ascending order the
		// views agree (Assign spreads free addresses in order), out of
		// order they did not, and both took one: now, once each notices
		// the cut (a hold time), lb1 and lb2 are cut (cutoff.go) and only
		// lb3 is given a free address
		{name: "new addresses appear one a tick in descending order after a hold: each taken once", hosts: []string{"lb1", "lb2", "lb3"},
			each: func(s *sim, i int) {
				if i >= 4 && i < 10 {
					s.want(addrs(12)[15-i])
				}
			}, ticks: 20, moves: true},
		// the limit left (docs/addresses.md): within the first hold time
		// of the cut nobody knows of it yet
		{name: "new addresses appear one a tick in descending order at once: two holders until the heal", hosts: []string{"lb1", "lb2", "lb3"},
			each: func(s *sim, i int) {
				if i < 6 {
					s.want(addrs(12)[11-i])
				}
			}, ticks: 20, twoHolders: true, moves: true},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			s := newSim(t, addrs(6), tc.hosts...)
			s.old = map[string]bool{}
			for _, h := range tc.old {
				s.old[h] = true
			}
			s.step(5)
			s.oneOwnerEach()
			before := s.moves
			s.cut[[2]string{"lb1", "lb2"}] = true
			if tc.during != nil {
				s.step(1)
				tc.during(s)
			}
			twice := false
			for i := range tc.ticks {
				if tc.each != nil {
					tc.each(s, i)
				}
				s.step(1)
				for a, own := range s.owners() {
					if len(own) > 1 {
						twice = true
						if !tc.twoHolders {
							t.Fatalf("%s held by %v during the cut (+%v)", a, own, s.now.Sub(time.Unix(1000, 0)))
						}
					}
				}
			}
			if twice != tc.twoHolders {
				t.Fatalf("two holders during the cut: %v, want %v (owners %v)", twice, tc.twoHolders, s.owners())
			}
			if moved := s.moves != before; moved != tc.moves {
				t.Fatalf("takes during the cut: %d, want some: %v", s.moves-before, tc.moves)
			}
			if !tc.twoHolders {
				if tc.during != nil && len(s.addrs) == 6 {
					s.oneOwnerEach("lb2")
				} else if len(s.addrs) > 6 {
					s.oneOwnerEach()
				} else {
					s.oneOwnerEach()
				}
			}
			clear(s.cut)
			s.step(2)
			if tc.during != nil && len(s.addrs) == 6 {
				s.oneOwnerEach("lb2")
			} else {
				s.oneOwnerEach()
			}
		})
	}
}

// TestSupportCountsOnlyWhoLostTheHolder: the support of a taking from a
// silent holder counts a live peer only when its heartbeat does not say
// it heard the holder after this host did.
func TestSupportCountsOnlyWhoLostTheHolder(t *testing.T) {
	a := netip.MustParseAddr("192.0.2.1")
	cases := []struct {
		name  string
		hears []Heard // lb3's list
		want  int
	}{
		{"no list (an older version)", nil, 2},
		{"names another host", []Heard{{Host: "lb4", Epoch: 1, Seq: 9}}, 2},
		{"heard lb2's last heartbeat, as this host did", []Heard{{Host: "lb2", Epoch: 1, Seq: 2}}, 2},
		{"heard lb2 after this host", []Heard{{Host: "lb2", Epoch: 1, Seq: 3}}, 1},
		{"heard lb2 restarted (a newer epoch)", []Heard{{Host: "lb2", Epoch: 2, Seq: 1}}, 1},
		{"heard an older lb2", []Heard{{Host: "lb2", Epoch: 0, Seq: 7}}, 2},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t0 := time.Unix(1000, 0)
			n := NewNode("lb1", hold, t0)
			recv := func(hb Heartbeat, at time.Time) {
				t.Helper()
				if _, err := n.Receive(hb, at); err != nil && !errors.Is(err, ErrReplay) {
					t.Fatal(err)
				}
			}
			claims := []Claim{{Addr: a, Hold: Hold{Term: 1, Support: 3}}}
			recv(Heartbeat{Host: "lb2", Epoch: 1, Seq: 1, Healthy: true, Claims: claims}, t0)
			recv(Heartbeat{Host: "lb2", Epoch: 1, Seq: 2, Healthy: true, Claims: claims}, t0.Add(tick))
			// lb3 heard every tick, well after lb2 fell silent
			for i := range 6 {
				recv(Heartbeat{Host: "lb3", Epoch: 1, Seq: uint64(i + 1), Healthy: true, Hears: tc.hears}, t0.Add(time.Duration(i)*tick))
			}
			now := t0.Add(5*tick + time.Millisecond)
			if got := n.support(a, 3, now); got != tc.want {
				t.Fatalf("support %d, want %d", got, tc.want)
			}
		})
	}
}

// TestSealCutsHears: a heartbeat with the most claims a host holds, of
// the longest IPv6 addresses, has little room left; the peers it names
// are cut to fit rather than the heartbeat refused (which would make the
// host fall silent), and every claim goes out.
func TestSealCutsHears(t *testing.T) {
	hb := Heartbeat{Host: "lb1", Epoch: 1 << 62, Seq: 1 << 40, Healthy: true}
	for i := range MaxHolds {
		b := netip.MustParseAddr("2001:db8:1234:5678:9abc:def0:1010:1010").As16()
		b[14], b[15] = 0x10|byte(i>>8), 0x10|byte(i)
		hb.Claims = append(hb.Claims, Claim{Addr: netip.AddrFrom16(b), Hold: Hold{Term: 999_999, Support: 9}})
	}
	for i := range MaxHears {
		hb.Hears = append(hb.Hears, Heard{Host: fmt.Sprintf("%063d", i), Epoch: 1 << 62, Seq: 1 << 40})
	}
	got, b := sealOpen(t, hb, key)
	if len(got.Claims) != MaxHolds || len(got.Hears) >= MaxHears {
		t.Fatalf("%d claims, %d peers named; want %d claims and fewer than %d peers", len(got.Claims), len(got.Hears), MaxHolds, MaxHears)
	}
	t.Logf("%d bytes, %d of %d peers named", len(b), len(got.Hears), MaxHears)
	// the names kept are the first ones, as they were
	for i, h := range got.Hears {
		if h != hb.Hears[i] {
			t.Fatalf("peer %d: %+v, sent %+v", i, h, hb.Hears[i])
		}
	}
}

// TestForgedHearsRefused: a heartbeat naming peers is signed like the
// rest: a list changed on the wire, or signed with another key, is
// refused and vouches for nobody.
func TestForgedHearsRefused(t *testing.T) {
	s := newSim(t, addrs(6), "lb1", "lb2", "lb3")
	s.step(5)
	s.oneOwnerEach()
	s.cut[[2]string{"lb1", "lb2"}] = true
	s.stopped["lb3"] = true // lb1 and lb2 alone, cut: each takes the other's
	forged, err := Seal(Heartbeat{Host: "lb3", Epoch: 1 << 62, Seq: 1, Healthy: true,
		Hears: []Heard{{Host: "lb1", Epoch: 1 << 62, Seq: 1 << 40}, {Host: "lb2", Epoch: 1 << 62, Seq: 1 << 40}}}, []byte("a guess"))
	if err != nil {
		t.Fatal(err)
	}
	for range 6 {
		for _, to := range []string{"lb1", "lb2"} {
			if _, err := s.deliver(to, forged); !errors.Is(err, ErrBadMAC) {
				t.Fatalf("forged list to %s: %v, want ErrBadMAC", to, err)
			}
		}
		s.step(1)
	}
	if got := len(s.nodes["lb1"].Holds()) + len(s.nodes["lb2"].Holds()); got != 12 {
		t.Fatalf("lb1 and lb2 hold %d addresses together, want 12 (both all 6: no witness)", got)
	}
}

// TestNodeAwaitsLateWitness: lb1 | lb2 cut, and lb3's heartbeats to
// lb1 lost for the three ticks around lb2's hold expiring there (a
// loaded witness, late by less than its own hold): lb3's last word on
// lb2 came with lb2's last heartbeat, so lb1 cannot tell a cut from a
// failure yet and waits for lb3's next heartbeat instead of taking lb2's
// addresses (two holders until it came).
func TestNodeAwaitsLateWitness(t *testing.T) {
	s := newSim(t, addrs(6), "lb1", "lb2", "lb3")
	s.step(5)
	s.oneOwnerEach()
	before := s.moves
	s.cut[[2]string{"lb1", "lb2"}] = true
	s.step(1)
	s.cut[[2]string{"lb1", "lb3"}] = true
	for i := range 8 {
		if i == 3 {
			delete(s.cut, [2]string{"lb1", "lb3"})
		}
		s.step(1)
		for a, own := range s.owners() {
			if len(own) > 1 {
				t.Fatalf("%s held by %v, tick %d of the late witness", a, own, i+1)
			}
		}
	}
	if s.moves != before {
		t.Fatalf("%d takes during the cut, want none", s.moves-before)
	}
	s.oneOwnerEach()
}

// TestNodeQuickHealKeepsOwners: a host cut off from its peers one after
// the other (lb3 first, lb2 a heartbeat later) notices lb3's silence
// first and takes its addresses while lb2 still counts as live; the cut
// heals before it notices lb2's. Those takings count lb2 as no support
// (heard last about when lb3 was), so lb3, which never stopped, keeps
// its addresses when the cut heals. lb2 is of an older version (its
// heartbeats name no peers): a lb2 naming the peers it hears, heard last
// about when lb3 was, makes lb1 wait for its word instead of taking
// (hears.go, TestNodeAwaitsLateWitness), and the scene is never set.
func TestNodeQuickHealKeepsOwners(t *testing.T) {
	s := newSim(t, addrs(6), "lb1", "lb2", "lb3")
	s.old = map[string]bool{"lb2": true}
	s.step(5)
	s.oneOwnerEach()
	kept := s.nodes["lb3"].Holds()
	s.cut[[2]string{"lb1", "lb3"}] = true
	s.step(1)
	s.cut[[2]string{"lb1", "lb2"}] = true
	s.step(3)
	if !slices.ContainsFunc(kept, func(a netip.Addr) bool { return slices.Contains(s.nodes["lb1"].Holds(), a) }) {
		t.Fatalf("lb1 took none of lb3's %v while cut off (holds %v): the scene is not set", kept, s.nodes["lb1"].Holds())
	}
	clear(s.cut)
	s.step(3)
	s.oneOwnerEach()
	for _, a := range kept {
		if own := s.owners()[a]; len(own) != 1 || own[0] != "lb3" {
			t.Errorf("%s held by %v after the heal, was lb3's (which never stopped)", a, own)
		}
	}
}

// want adds more to the addresses every node of s serves (healthy).
func (s *sim) want(more ...netip.Addr) {
	s.addrs = append(s.addrs, more...)
	for _, n := range s.nodes {
		n.Set(Want{Addrs: s.addrs, Healthy: true})
	}
}
