package announce

import (
	"fmt"
	"net/netip"
	"testing"
)

func addrs(n int) []netip.Addr {
	var out []netip.Addr
	for i := 1; i <= n; i++ {
		out = append(out, netip.MustParseAddr(fmt.Sprintf("192.0.2.%d", 100+i)))
	}
	return out
}

func TestAssign(t *testing.T) {
	a := addrs(6)
	// claims: address index, term, ... (support 3)
	claims := func(kv ...int) map[netip.Addr]Hold {
		m := map[netip.Addr]Hold{}
		for i := 0; i < len(kv); i += 2 {
			m[a[kv[i]]] = Hold{Term: uint64(kv[i+1]), Support: 3}
		}
		return m
	}
	seen := func(i, term int) map[netip.Addr]uint64 { return map[netip.Addr]uint64{a[i]: uint64(term)} }
	cases := []struct {
		name  string
		hosts []Host
		seen  map[netip.Addr]uint64
		check func(t *testing.T, got map[netip.Addr]Owner)
	}{{
		name:  "nobody healthy: nobody owns",
		hosts: []Host{{ID: "a"}, {ID: "b", Claims: claims(0, 1)}},
		check: func(t *testing.T, got map[netip.Addr]Owner) {
			if len(got) != 0 {
				t.Fatalf("owners %v, want none", got)
			}
		},
	}, {
		name:  "free addresses spread evenly, term 1",
		hosts: []Host{{ID: "a", Healthy: true}, {ID: "b", Healthy: true}, {ID: "c", Healthy: true}},
		check: func(t *testing.T, got map[netip.Addr]Owner) {
			load := map[string]int{}
			for _, o := range got {
				load[o.Host]++
				if o.Hold != (Hold{Term: 1, Support: 3}) {
					t.Errorf("%+v, want term 1, support 3", o.Hold)
				}
			}
			if len(got) != 6 || load["a"] != 2 || load["b"] != 2 || load["c"] != 2 {
				t.Fatalf("load %v over %d addresses, want 2 each over 6", load, len(got))
			}
		},
	}, {
		name: "sticky: a host holding everything keeps it when others return",
		hosts: []Host{{ID: "a", Healthy: true, Claims: claims(0, 3, 1, 3, 2, 3, 3, 3, 4, 3, 5, 3)},
			{ID: "b", Healthy: true}, {ID: "c", Healthy: true}},
		check: func(t *testing.T, got map[netip.Addr]Owner) {
			for x, o := range got {
				if o.Host != "a" || o.Term != 3 || o.Support != 3 {
					t.Errorf("%s: %+v, want a at term 3", x, o)
				}
			}
		},
	}, {
		name: "two claims: the newer taking wins whatever the rank",
		hosts: []Host{{ID: "a", Healthy: true, Claims: claims(0, 4)}, {ID: "b", Healthy: true, Claims: claims(0, 5)},
			{ID: "c", Healthy: true, Claims: claims(0, 4)}},
		check: func(t *testing.T, got map[netip.Addr]Owner) {
			if o := got[a[0]]; o != (Owner{"b", Hold{5, 3}}) {
				t.Fatalf("owner %+v, want b at 5", o)
			}
		},
	}, {
		name: "two claims: more support wins over a newer taking (the side of a partition that heard more)",
		hosts: []Host{{ID: "a", Healthy: true, Claims: map[netip.Addr]Hold{a[0]: {Term: 9, Support: 1}}},
			{ID: "b", Healthy: true, Claims: map[netip.Addr]Hold{a[0]: {Term: 2, Support: 2}}}},
		check: func(t *testing.T, got map[netip.Addr]Owner) {
			if o := got[a[0]]; o.Host != "b" {
				t.Fatalf("owner %+v, want b", o)
			}
		},
	}, {
		name:  "an unhealthy holder's claim does not count, its term does",
		hosts: []Host{{ID: "a", Claims: claims(0, 7)}, {ID: "b", Healthy: true}},
		check: func(t *testing.T, got map[netip.Addr]Owner) {
			if o := got[a[0]]; o != (Owner{"b", Hold{8, 2}}) {
				t.Fatalf("owner %+v, want b at 8", o)
			}
		},
	}, {
		name:  "a term heard before (seen) is passed too",
		hosts: []Host{{ID: "b", Healthy: true}},
		seen:  seen(0, 9),
		check: func(t *testing.T, got map[netip.Addr]Owner) {
			if o := got[a[0]]; o != (Owner{"b", Hold{10, 1}}) {
				t.Fatalf("owner %+v, want b at 10", o)
			}
		},
	}, {
		name: "a failed host's addresses go to the least loaded",
		hosts: []Host{{ID: "b", Healthy: true, Claims: claims(0, 1, 1, 1, 2, 1)},
			{ID: "c", Healthy: true, Claims: claims(3, 1)}},
		check: func(t *testing.T, got map[netip.Addr]Owner) {
			if got[a[4]].Host != "c" || got[a[5]].Host != "c" {
				t.Fatalf("free addresses went to %s and %s, want c (1 held against 3)", got[a[4]].Host, got[a[5]].Host)
			}
		},
	}}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			got := Assign(a, tc.hosts, tc.seen)
			tc.check(t, got)
			// the same on every host: the hosts' order does not matter
			rev := append([]Host{}, tc.hosts...)
			for i, j := 0, len(rev)-1; i < j; i, j = i+1, j-1 {
				rev[i], rev[j] = rev[j], rev[i]
			}
			again := Assign(a, rev, tc.seen)
			for x, o := range got {
				if again[x] != o {
					t.Fatalf("%s: %+v in one order, %+v in the other", x, o, again[x])
				}
			}
		})
	}
}

// TestAssignRankSpreads: with one address each, ties between idle hosts
// break differently per address (no host wins them all).
func TestAssignRankSpreads(t *testing.T) {
	hosts := []Host{{ID: "lb1", Healthy: true}, {ID: "lb2", Healthy: true}, {ID: "lb3", Healthy: true}}
	won := map[string]int{}
	for _, a := range addrs(60) {
		won[Assign([]netip.Addr{a}, hosts, nil)[a].Host]++
	}
	for _, h := range hosts {
		if won[h.ID] < 5 {
			t.Fatalf("first choices %v: %s almost never first", won, h.ID)
		}
	}
}
