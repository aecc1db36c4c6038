package announce

import (
	"errors"
	"net/netip"
	"slices"
	"testing"
	"time"
)

const (
	tick = 100 * time.Millisecond
	hold = 300 * time.Millisecond
)

var key = []byte("the group's key")

// sim is a group of nodes on a fake clock, exchanging sealed heartbeats
// every tick. A stopped node sends and hears nothing (dead or frozen); a
// cut pair does not hear each other (a partition).
type sim struct {
	t       *testing.T
	now     time.Time
	nodes   map[string]*Node
	names   []string
	stopped map[string]bool
	cut     map[[2]string]bool
	addrs   []netip.Addr
	moves   int // takes after the group settled
	// holdDown, when set before a node starts, is its hold-down
	holdDown time.Duration
	// old nodes send heartbeats without Hears (an older version)
	old map[string]bool
}

func newSim(t *testing.T, addrs []netip.Addr, names ...string) *sim {
	s := &sim{t: t, now: time.Unix(1000, 0), nodes: map[string]*Node{}, names: names,
		stopped: map[string]bool{}, cut: map[[2]string]bool{}, addrs: addrs}
	for _, n := range names {
		s.start(n)
	}
	return s
}

func (s *sim) start(name string) {
	n := NewNode(name, hold, s.now)
	n.HoldDown(s.holdDown)
	n.Set(Want{Addrs: s.addrs, Healthy: true})
	s.nodes[name] = n
	delete(s.stopped, name)
}

func (s *sim) step(k int) {
	for range k {
		s.now = s.now.Add(tick)
		var sent [][]byte
		var from []string
		for _, name := range s.names {
			if s.stopped[name] {
				continue
			}
			hb := s.nodes[name].Heartbeat()
			if s.old[name] {
				hb.Hears = nil
			}
			b, err := Seal(hb, key)
			if err != nil {
				s.t.Fatal(err)
			}
			sent, from = append(sent, b), append(from, name)
		}
		for i, b := range sent {
			for _, to := range s.names {
				if to == from[i] || s.stopped[to] || s.cut[[2]string{from[i], to}] || s.cut[[2]string{to, from[i]}] {
					continue
				}
				s.deliver(to, b)
			}
		}
		s.decide()
	}
}

// firstMove steps the nodes k ticks, calling each (when set) before
// tick i (1..k), and returns the first tick after which a node had
// taken an address (0: none).
func (s *sim) firstMove(k int, each func(i int)) int {
	at := 0
	for i := 1; i <= k; i++ {
		if each != nil {
			each(i)
		}
		s.step(1)
		if s.moves > 0 && at == 0 {
			at = i
		}
	}
	return at
}

func (s *sim) deliver(to string, b []byte) (bool, error) {
	hb, err := Open(b, key)
	if err != nil {
		return false, err
	}
	return s.nodes[to].Receive(hb, s.now)
}

func (s *sim) decide() {
	for _, name := range s.names {
		if !s.stopped[name] {
			s.moves += len(s.nodes[name].Decide(s.now).Take)
		}
	}
}

// owners is who holds each address among the running nodes.
func (s *sim) owners() map[netip.Addr][]string {
	out := map[netip.Addr][]string{}
	for _, name := range s.names {
		if s.stopped[name] {
			continue
		}
		for _, a := range s.nodes[name].Holds() {
			out[a] = append(out[a], name)
		}
	}
	return out
}

// oneOwnerEach fails unless every address has exactly one running owner,
// not among not; it returns the load per host.
func (s *sim) oneOwnerEach(not ...string) map[string]int {
	s.t.Helper()
	load := map[string]int{}
	own := s.owners()
	for _, a := range s.addrs {
		if len(own[a]) != 1 || slices.Contains(not, own[a][0]) {
			s.t.Fatalf("%s held by %v at +%v", a, own[a], s.now.Sub(time.Unix(1000, 0)))
		}
		load[own[a][0]]++
	}
	return load
}

func TestNodeSettlesSpread(t *testing.T) {
	s := newSim(t, addrs(6), "lb1", "lb2", "lb3")
	s.step(1)
	if len(s.owners()) != 0 {
		t.Fatalf("took %v before hearing the group (hold not passed)", s.owners())
	}
	s.step(4)
	if load := s.oneOwnerEach(); load["lb1"] != 2 || load["lb2"] != 2 || load["lb3"] != 2 {
		t.Fatalf("load %v, want 2 each", load)
	}
}

func TestNodeFailover(t *testing.T) {
	cases := []struct {
		name  string
		fault func(s *sim, victim string)
		// within: ticks after the fault by which the victim's addresses
		// have one new owner each
		within int
	}{
		{"dead (silent)", func(s *sim, v string) { s.stopped[v] = true }, 4},
		{"unhealthy (says so)", func(s *sim, v string) { s.nodes[v].Set(Want{Addrs: s.addrs}) }, 1},
		{"no longer told to serve", func(s *sim, v string) { s.nodes[v].Set(Want{Healthy: false, Addrs: s.addrs}) }, 1},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			s := newSim(t, addrs(6), "lb1", "lb2", "lb3")
			s.step(5)
			s.oneOwnerEach()
			victim := s.owners()[s.addrs[0]][0]
			had := s.nodes[victim].Holds()
			tc.fault(s, victim)
			s.step(tc.within)
			if !s.stopped[victim] && len(s.nodes[victim].Holds()) != 0 {
				t.Fatalf("%s still holds %v", victim, s.nodes[victim].Holds())
			}
			own := s.owners()
			for _, a := range had {
				if len(own[a]) != 1 || own[a][0] == victim {
					t.Fatalf("%s held by %v %d ticks after the fault", a, own[a], tc.within)
				}
			}
			// the others' addresses did not move
			before := s.moves
			s.step(3)
			if s.moves != before {
				t.Fatalf("%d more takes in a steady group", s.moves-before)
			}
			// the victim returns: nothing moves back to it
			if s.stopped[victim] {
				s.start(victim)
			} else {
				s.nodes[victim].Set(Want{Addrs: s.addrs, Healthy: true})
			}
			s.step(10)
			if got := s.nodes[victim].Holds(); len(got) != 0 {
				t.Fatalf("%s took %v back on its return", victim, got)
			}
			s.oneOwnerEach()
			if s.moves != before {
				t.Fatalf("%d takes after the victim returned, want none", s.moves-before)
			}
		})
	}
}

// TestNodePartitionHeals: a host cut off from the others keeps its
// addresses while they take them over (a newer term); once it hears them
// again it lets go within one heartbeat: one owner per address.
func TestNodePartitionHeals(t *testing.T) {
	s := newSim(t, addrs(6), "lb1", "lb2", "lb3")
	s.step(5)
	s.oneOwnerEach()
	lone := "lb1"
	had := s.nodes[lone].Holds()
	s.cut[[2]string{"lb1", "lb2"}], s.cut[[2]string{"lb1", "lb3"}] = true, true
	s.step(5)
	for _, a := range had {
		if len(s.owners()[a]) != 2 {
			t.Fatalf("%s held by %v during the partition, want the lone host and one other", a, s.owners()[a])
		}
	}
	clear(s.cut)
	s.step(1)
	s.oneOwnerEach("lb1")
}

// TestNodeForgedHeartbeats: heartbeats that are not the group's (another
// key, a replay of a dead host's) change nothing.
func TestNodeForgedHeartbeats(t *testing.T) {
	s := newSim(t, addrs(3), "lb1", "lb2", "lb3")
	s.step(5)
	s.oneOwnerEach()
	victim := s.owners()[s.addrs[0]][0]
	// a heartbeat of the victim's that a listener recorded, before newer
	// ones reached the group
	old, err := Seal(s.nodes[victim].Heartbeat(), key)
	if err != nil {
		t.Fatal(err)
	}
	s.step(1)
	s.stopped[victim] = true
	s.step(4)
	owners := s.owners()
	takes := s.moves
	// Forgeries: claim every address at a huge term, as a healthy "lb9",
	// and as the victim (alive again, holding everything).
	var all []Claim
	for _, a := range s.addrs {
		all = append(all, Claim{Addr: a, Hold: Hold{Term: 1 << 40, Support: 99}})
	}
	forged := []struct {
		name string
		b    func() []byte
		want error
	}{
		{"stranger with another key", func() []byte {
			b, _ := Seal(Heartbeat{Host: "lb9", Epoch: 1, Seq: 1, Healthy: true, Claims: all}, []byte("guess"))
			return b
		}, ErrBadMAC},
		{"the victim with another key", func() []byte {
			b, _ := Seal(Heartbeat{Host: victim, Epoch: 1 << 62, Seq: 1, Healthy: true, Claims: all}, []byte("guess"))
			return b
		}, ErrBadMAC},
		{"the victim's heartbeat replayed", func() []byte { return old }, ErrReplay},
	}
	for _, f := range forged {
		for _, to := range s.names {
			if s.stopped[to] {
				continue
			}
			if _, err := s.deliver(to, f.b()); !errors.Is(err, f.want) {
				t.Fatalf("%s to %s: %v, want %v", f.name, to, err, f.want)
			}
		}
		s.decide()
	}
	if s.moves != takes {
		t.Fatalf("forged heartbeats moved %d addresses", s.moves-takes)
	}
	for a, o := range s.owners() {
		if !slices.Equal(o, owners[a]) {
			t.Fatalf("%s: %v, was %v", a, o, owners[a])
		}
	}
	s.oneOwnerEach(victim)
}

// TestNodeManyAddresses: 500 addresses spread evenly, and all of a dead
// host's move in one go, evenly, to the others; the heartbeats carrying
// them fit in one datagram.
func TestNodeManyAddresses(t *testing.T) {
	var many []netip.Addr
	for i := range 500 {
		many = append(many, netip.AddrFrom16([16]byte{0x20, 0x01, 0x0d, 0xb8, 15: byte(i), 14: byte(i >> 8)}))
	}
	s := newSim(t, many, "lb1", "lb2", "lb3")
	s.step(5)
	for h, n := range s.oneOwnerEach() {
		if n < 166 || n > 167 {
			t.Fatalf("%s holds %d of 500", h, n)
		}
	}
	s.stopped["lb1"] = true
	s.step(4)
	load := s.oneOwnerEach("lb1")
	if load["lb2"] != 250 || load["lb3"] != 250 {
		t.Fatalf("load %v after lb1 died, want 250 each", load)
	}
	if _, err := Seal(s.nodes["lb2"].Heartbeat(), key); err != nil {
		t.Fatal(err)
	}
}

// TestNodeMaxHolds: a host given more addresses than fit in a heartbeat
// takes up to the limit and says how many it could not, instead of
// falling silent.
func TestNodeMaxHolds(t *testing.T) {
	s := newSim(t, addrs(6), "lb1")
	n := s.nodes["lb1"]
	n.maxHolds = 4
	s.now = s.now.Add(hold)
	ch := n.Decide(s.now)
	if len(ch.Take) != 4 || ch.Unserved != 2 || len(n.Holds()) != 4 {
		t.Fatalf("took %v, %d unserved, holds %v; want 4 taken, 2 unserved", ch.Take, ch.Unserved, n.Holds())
	}
	if _, err := Seal(n.Heartbeat(), key); err != nil {
		t.Fatal(err)
	}
}

// TestNodeAnnouncesAgainAfterHeal: when a partition heals, the host that
// keeps an address the returning host took while cut off is told to
// announce it again (Change.Again), whichever of the two hears the other
// first: when it hears the returning host (back after its silence, or
// claiming the address), and not once that host, heard again, no longer
// claims it. Nothing else changes for it.
func TestNodeAnnouncesAgainAfterHeal(t *testing.T) {
	type hearing struct {
		to, from string
		again    bool // the owner (lb2) is told to announce what it keeps
	}
	cases := []struct {
		name  string
		steps []hearing
	}{
		{"the owner hears the returning host first", []hearing{
			{"lb2", "lb1", true}, {"lb1", "lb2", false}, {"lb2", "lb1", false}}},
		{"the returning host hears the owner first and lets go", []hearing{
			{"lb1", "lb2", false}, {"lb2", "lb1", true}, {"lb2", "lb1", false}}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			s := newSim(t, addrs(6), "lb1", "lb2", "lb3")
			s.step(5)
			s.oneOwnerEach()
			s.cut[[2]string{"lb1", "lb2"}], s.cut[[2]string{"lb1", "lb3"}] = true, true
			s.step(5)
			if got := len(s.nodes["lb1"].Holds()); got != 6 {
				t.Fatalf("the lone host holds %d addresses, want all 6", got)
			}
			clear(s.cut)
			kept := s.nodes["lb2"].Holds()
			for i, h := range tc.steps {
				b, err := Seal(s.nodes[h.from].Heartbeat(), key)
				if err != nil {
					t.Fatal(err)
				}
				if _, err := s.deliver(h.to, b); err != nil {
					t.Fatal(err)
				}
				ch := s.nodes[h.to].Decide(s.now)
				if h.to != "lb2" {
					continue
				}
				var want []netip.Addr
				if h.again {
					want = kept
				}
				if !slices.Equal(ch.Again, want) {
					t.Errorf("step %d: announce again %v, want %v", i, ch.Again, want)
				}
				if !ch.Empty() {
					t.Errorf("step %d: the owner changed %+v", i, ch)
				}
			}
		})
	}
}
