package pools

import (
	"net/netip"
	"slices"
	"testing"
)

// A claimed address goes only to its holder (or a sharer of its key while
// the holder uses it), whatever the ages: the first to claim keeps it.
func TestAllocateClaimed(t *testing.T) {
	web := Pool{Name: "web", Ranges: []Range{rg("198.18.0.10-198.18.0.12")}, AutoAssign: true}
	one := Pool{Name: "one", Ranges: []Range{rg("198.18.0.10/32")}, AutoAssign: true}
	claim := func(a, key, share string) Claims { return Claims{netip.MustParseAddr(a): {key, share}} }
	keep := func(r *Request) { r.KeepOnly = true }
	for _, tc := range []struct {
		name   string
		pools  []Pool
		reqs   []Request
		claims Claims
		want   string
	}{
		{"no claims: as Allocate", []Pool{web}, []Request{req("a/x"), req("a/y")}, nil,
			"a/x=198.18.0.10 a/y=198.18.0.11"},
		{"a fresh address claimed by a younger object of the other controller is skipped", []Pool{web},
			[]Request{req("a/x")}, claim("198.18.0.10", "Gateway a/g", ""),
			"a/x=198.18.0.11"},
		{"the last free address claimed by another: exhausted", []Pool{one},
			[]Request{req("a/x")}, claim("198.18.0.10", "Gateway a/g", ""),
			"a/x:AddressPoolExhausted"},
		{"the holder keeps it though an older object lists it (lost the race)", []Pool{one},
			[]Request{req("a/x", current("198.18.0.10")), req("Gateway a/g")}, claim("198.18.0.10", "Gateway a/g", ""),
			"Gateway a/g=198.18.0.10 a/x:AddressPoolExhausted"},
		{"the holder gets its claimed address before its status lists it", []Pool{web},
			[]Request{req("a/x"), req("a/y")}, claim("198.18.0.11", "a/y", ""),
			"a/x=198.18.0.10 a/y=198.18.0.11"},
		{"asked for by value, claimed by another: taken, named", []Pool{web},
			[]Request{req("a/x", asks("198.18.0.12"))}, claim("198.18.0.12", "Gateway a/g", ""),
			"a/x:AddressTaken"},
		{"a claim of a holder that no longer wants it blocks until released", []Pool{web},
			[]Request{req("a/x", asks("198.18.0.11")), req("a/y")}, claim("198.18.0.10", "a/x", ""),
			"a/x=198.18.0.11 a/y=198.18.0.12"},
		{"a sharer joins the holder once the holder uses it", []Pool{web},
			[]Request{req("Gateway a/g", current("198.18.0.10"), share("k", 80), keep), req("a/x", share("k", 443))}, claim("198.18.0.10", "Gateway a/g", "k"),
			"Gateway a/g=198.18.0.10 a/x=198.18.0.10"},
		{"a sharer does not join a holder not seen using it (ports unknown)", []Pool{web},
			[]Request{req("a/x", share("k", 443), asks("198.18.0.10"))}, claim("198.18.0.10", "Gateway a/g", "k"),
			"a/x:AddressTaken"},
		{"a sharer older than the holder joins it (the holder takes its claim first)", []Pool{web},
			[]Request{req("a/x", share("k", 443), current("198.18.0.10")), req("Gateway a/g", share("k", 80), keep)}, claim("198.18.0.10", "Gateway a/g", "k"),
			"Gateway a/g=198.18.0.10 a/x=198.18.0.10"},
		{"a sharer keeps what its status lists when the holder is gone", []Pool{web},
			[]Request{req("a/y", share("k", 443), ours("198.18.0.10"))}, claim("198.18.0.10", "a/x", "k"),
			"a/y=198.18.0.10"},
		{"a sharer gets nothing new from a gone holder's claim", []Pool{web},
			[]Request{req("a/y", share("k", 443))}, claim("198.18.0.10", "a/x", "k"),
			"a/y=198.18.0.11"},
		{"another key never joins", []Pool{web},
			[]Request{req("Gateway a/g", current("198.18.0.10"), share("k", 80), keep), req("a/x", share("j", 443))}, claim("198.18.0.10", "Gateway a/g", "k"),
			"Gateway a/g=198.18.0.10 a/x=198.18.0.11"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := summary(AllocateClaimed(tc.pools, tc.reqs, tc.claims)); got != tc.want {
				t.Errorf("got  %s\nwant %s", got, tc.want)
			}
		})
	}
}

func TestClaimedCounts(t *testing.T) {
	res := AllocateClaimed([]Pool{{Name: "p", Ranges: []Range{rg("198.18.0.0/30")}, AutoAssign: true}},
		[]Request{req("a/x")}, Claims{netip.MustParseAddr("198.18.0.0"): {Key: "Gateway a/g"}})
	if c := res.Pools["p"]; c.Assigned != 2 || c.Free != 2 {
		t.Errorf("counts %+v, want 2 assigned (one claimed, not yet listed), 2 free", c)
	}
}

func TestUsable(t *testing.T) {
	a, b, c := netip.MustParseAddr("198.18.0.1"), netip.MustParseAddr("198.18.0.2"), netip.MustParseAddr("198.18.0.3")
	for _, tc := range []struct {
		name                string
		claims              Claims
		share               string
		published, assigned []netip.Addr
		usable, pending     []netip.Addr
	}{
		{"no claims made: everything", nil, "", nil, []netip.Addr{a, b}, []netip.Addr{a, b}, nil},
		{"claimed for it", Claims{a: {Key: "ns/s"}}, "", nil, []netip.Addr{a}, []netip.Addr{a}, nil},
		{"not yet claimed: pending", Claims{}, "", nil, []netip.Addr{a}, nil, []netip.Addr{a}},
		{"published before claims: kept while claimed", Claims{}, "", []netip.Addr{a}, []netip.Addr{a, b}, []netip.Addr{a}, []netip.Addr{b}},
		{"claimed by a sharer of its key", Claims{a: {Key: "Gateway ns/g", ShareKey: "k"}}, "k", nil, []netip.Addr{a}, []netip.Addr{a}, nil},
		{"claimed by another, published: not usable", Claims{c: {Key: "Gateway ns/g"}}, "", []netip.Addr{c}, []netip.Addr{c}, nil, []netip.Addr{c}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			u, p := tc.claims.Usable("ns/s", tc.share, tc.published, tc.assigned)
			if !slices.Equal(u, tc.usable) || !slices.Equal(p, tc.pending) {
				t.Errorf("usable %v pending %v, want %v %v", u, p, tc.usable, tc.pending)
			}
		})
	}
}
