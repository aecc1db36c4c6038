package bgp

import (
	"context"
	"fmt"
	"net/netip"
	"testing"
	"time"

	"github.com/haproxy-k8s-sync/haproxy-k8s-sync/internal/announce"
	"github.com/haproxy-k8s-sync/haproxy-k8s-sync/internal/testing/netlab"
)

// TestRouterIPv6, against BIRD 2 over IPv6 sessions (BFD 100 ms x 3 on
// them): the IPv6 address is learned from both hosts with their IPv6
// addresses as next hops, one multipath kernel route, new connections
// answered by both; the IPv4 address is not sent on an IPv6 session
// unless IPv4OverIPv6, and then it is, with an IPv6 next hop, and its
// traffic flows through the router's IPv4-via-IPv6 kernel route. A host
// whose gate fails withdraws both; a frozen host is dropped by BFD.
func TestRouterIPv6(t *testing.T) {
	for _, tc := range []struct {
		name    string
		v4over6 bool
	}{
		{"IPv6 routes", false},
		{"IPv4 routes too", true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			l := newLab(t, 2, birdOpts{ipv6: true, v4over6: tc.v4over6, bfd: 100 * time.Millisecond})
			lb1, lb2 := l.lbs[0], l.lbs[1]
			w := announce.Want{Addrs: []netip.Addr{vip4, vip6}, Healthy: true}
			sf := speakerFile{Config: Config{RestartTime: 30 * time.Second, BFD: 100 * time.Millisecond, IPv4OverIPv6: tc.v4over6}}
			l.start(lb1, sf, w)
			l.start(lb2, sf, w)
			served := []netip.Addr{vip6}
			if tc.v4over6 {
				served = append(served, vip4)
			}
			for _, a := range served {
				if err := l.waitRoutes(a, up, lb1, lb2); err != nil {
					t.Fatal(err)
				}
				if err := l.waitNexthops(a, 5*time.Second, lb1, lb2); err != nil {
					t.Fatal(err)
				}
				if err := l.answeredByBoth(a); err != nil {
					t.Fatal(err)
				}
			}
			if !tc.v4over6 {
				if err := l.waitRoutes(vip4, 0); err != nil {
					t.Fatalf("an IPv4 route on an IPv6 session without IPv4OverIPv6: %v", err)
				}
			}

			// lb1's gate fails: withdrawn at once
			w.Healthy = false
			l.set(lb1, w)
			for _, a := range served {
				if err := l.waitRoutes(a, time.Second, lb2); err != nil {
					t.Fatal(err)
				}
			}
			w.Healthy = true
			l.set(lb1, w)
			for _, a := range served {
				if err := l.waitRoutes(a, 2*time.Second, lb1, lb2); err != nil {
					t.Fatal(err)
				}
			}

			// lb1 frozen: BFD over IPv6 drops its paths well before the hold time
			if err := l.bfdUp(10 * time.Second); err != nil {
				t.Fatal(err)
			}
			took, err := l.freeze(lb1, vip6, time.Second, lb2)
			if err != nil {
				t.Fatal(err)
			}
			t.Logf("the frozen host's IPv6 path gone after %s", took.Round(time.Millisecond))
			if name, err := l.ask(vip6, time.Second); err != nil || name != lb2.Name {
				t.Fatalf("answered by %q (%v), want lb2", name, err)
			}
		})
	}
}

// answeredByBoth polls until new connections to a are answered by both
// hosts (ECMP at the router).
func (l *lab) answeredByBoth(a netip.Addr) error {
	return netlab.Eventually(context.Background(), 10*time.Second, func() error {
		seen := map[string]int{}
		for range 32 {
			name, err := l.ask(a, time.Second)
			if err != nil {
				return err
			}
			seen[name]++
		}
		if seen["lb1"] == 0 || seen["lb2"] == 0 {
			return fmt.Errorf("%s: answers %v, want both hosts", a, seen)
		}
		return nil
	})
}
