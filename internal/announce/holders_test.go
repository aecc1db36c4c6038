package announce

import (
	"net/netip"
	"reflect"
	"testing"
)

func TestMoves(t *testing.T) {
	a, b := netip.MustParseAddr("192.0.2.10"), netip.MustParseAddr("2001:db8::10")
	why := func(host string) string { return map[string]string{"lb1": WhySilent, "lb2": WhyUnhealthy}[host] }
	for _, tc := range []struct {
		name          string
		before, after Holders
		want          []Move
	}{
		{"nothing changed", Holders{a: {"lb1"}}, Holders{a: {"lb1"}}, nil},
		{"taken, nobody before", Holders{}, Holders{a: {"lb1"}}, []Move{{Addr: a, To: []string{"lb1"}, Why: WhyNew}}},
		{"moved from a silent host", Holders{a: {"lb1"}}, Holders{a: {"lb3"}}, []Move{{Addr: a, From: []string{"lb1"}, To: []string{"lb3"}, Why: WhySilent}}},
		{"dropped by an unhealthy host, nobody now", Holders{b: {"lb2"}}, Holders{}, []Move{{Addr: b, From: []string{"lb2"}, Why: WhyUnhealthy}}},
		{"two owners (a partition healed), one left", Holders{a: {"lb1", "lb3"}}, Holders{a: {"lb3"}}, []Move{{Addr: a, From: []string{"lb1", "lb3"}, To: []string{"lb3"}, Why: WhySilent}}},
		{"one more announcer (BGP)", Holders{a: {"lb3"}}, Holders{a: {"lb1", "lb3"}}, []Move{{Addr: a, From: []string{"lb3"}, To: []string{"lb1", "lb3"}, Why: WhyNew}}},
		{"sorted by address", Holders{b: {"lb1"}, a: {"lb1"}}, Holders{}, []Move{
			{Addr: a, From: []string{"lb1"}, Why: WhySilent}, {Addr: b, From: []string{"lb1"}, Why: WhySilent}}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := Moves(tc.before, tc.after, why); !reflect.DeepEqual(got, tc.want) {
				t.Fatalf("%+v, want %+v", got, tc.want)
			}
		})
	}
}

// TestNodeHolders: every node of a settled group knows every address's
// one owner; when that owner dies the others agree on the new one and
// say it went silent; when one's gate fails, they say unhealthy.
func TestNodeHolders(t *testing.T) {
	s := newSim(t, addrs(3), "lb1", "lb2", "lb3")
	s.step(5)
	s.oneOwnerEach()
	truth := Holders(s.owners())
	for _, name := range s.names {
		if got := s.nodes[name].Holders(s.now); !reflect.DeepEqual(got, truth) {
			t.Fatalf("%s knows %v, want %v", name, got, truth)
		}
	}
	for _, tc := range []struct {
		victim string
		fault  func(s *sim, v string)
		why    string
	}{
		{"lb1", func(s *sim, v string) { s.stopped[v] = true }, WhySilent},
		{"lb2", func(s *sim, v string) { s.nodes[v].Set(Want{Addrs: s.addrs, Healthy: false}) }, WhyUnhealthy},
	} {
		before := s.nodes["lb3"].Holders(s.now)
		tc.fault(s, tc.victim)
		s.step(5)
		after := s.nodes["lb3"].Holders(s.now)
		moves := Moves(before, after, func(h string) string { return s.nodes["lb3"].Why(h, s.now) })
		if len(moves) == 0 {
			t.Fatalf("%s: no move seen", tc.victim)
		}
		for _, m := range moves {
			if len(m.From) != 1 || m.From[0] != tc.victim || len(m.To) != 1 || m.To[0] == tc.victim || m.Why != tc.why {
				t.Fatalf("%s: move %+v, want from it to another, why %s", tc.victim, m, tc.why)
			}
		}
	}
}

func TestMoveMessage(t *testing.T) {
	a := netip.MustParseAddr("192.0.2.10")
	for _, tc := range []struct {
		m    Move
		want string
	}{
		{Move{Addr: a, To: []string{"lb1"}, Why: WhyNew}, "192.0.2.10 announced by lb1"},
		{Move{Addr: a, From: []string{"lb1"}, To: []string{"lb3"}, Why: WhySilent}, "192.0.2.10 moved from lb1 to lb3: lb1 silent"},
		{Move{Addr: a, From: []string{"lb2"}, Why: WhyUnhealthy}, "192.0.2.10 no longer announced: lb2 unhealthy"},
		{Move{Addr: a, From: []string{"lb3"}, To: []string{"lb1", "lb3"}, Why: WhyNew}, "192.0.2.10 announced by lb1, lb3 (was lb3)"},
	} {
		if got := tc.m.Message(); got != tc.want {
			t.Errorf("%q, want %q", got, tc.want)
		}
	}
}
