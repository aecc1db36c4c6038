package layer2

import (
	"maps"
	"net/netip"
	"slices"
	"testing"
	"time"

	"github.com/haproxy-k8s-sync/haproxy-k8s-sync/internal/announce"
)

// TestServed: the holders this host reports name it where the address
// is on its interface (the worker's), not where the loop decided it
// holds the address: a take not yet on the interface is not claimed, a
// release not yet off it is still named; a peer's claims are as heard.
func TestServed(t *testing.T) {
	a1, a2, a3 := netip.MustParseAddr("192.0.2.1"), netip.MustParseAddr("192.0.2.2"), netip.MustParseAddr("192.0.2.3")
	cases := []struct {
		name      string
		decided   []netip.Addr // the node's claims
		onIface   []netip.Addr // the worker's
		peerHolds []netip.Addr // lb2's, heard
		want      announce.Holders
	}{
		{"in step", []netip.Addr{a1}, []netip.Addr{a1}, nil, announce.Holders{a1: {"lb1"}}},
		{"taken, not on yet", []netip.Addr{a1, a2}, []netip.Addr{a1}, nil, announce.Holders{a1: {"lb1"}}},
		{"released, not off yet", nil, []netip.Addr{a1}, nil, announce.Holders{a1: {"lb1"}}},
		{"released, not off yet, a peer took it", nil, []netip.Addr{a1}, []netip.Addr{a1}, announce.Holders{a1: {"lb1", "lb2"}}},
		{"taken from a peer, not on yet", []netip.Addr{a3}, nil, []netip.Addr{a3}, announce.Holders{a3: {"lb2"}}},
		{"nothing", nil, nil, nil, announce.Holders{}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			now := time.Now()
			n := announce.NewNode("lb1", time.Second, now)
			var claims []announce.Claim
			for _, ad := range tc.decided {
				claims = append(claims, announce.Claim{Addr: ad, Hold: announce.Hold{Term: 1, Support: 2}})
			}
			n.Adopt(claims, now.Add(time.Minute))
			hb := announce.Heartbeat{Host: "lb2", Epoch: 1, Seq: 1, Healthy: true}
			for _, ad := range tc.peerHolds {
				hb.Claims = append(hb.Claims, announce.Claim{Addr: ad, Hold: announce.Hold{Term: 2, Support: 2}})
			}
			if _, err := n.Receive(hb, now); err != nil {
				t.Fatal(err)
			}
			a := &Announcer{cfg: Config{ID: "lb1"}, node: n, work: &worker{held: tc.onIface}}
			if got := a.served(now); !maps.EqualFunc(got, tc.want, slices.Equal) {
				t.Fatalf("served %v, want %v", got, tc.want)
			}
		})
	}
}
