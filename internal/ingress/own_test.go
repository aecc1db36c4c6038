package ingress

import (
	"net/netip"
	"testing"
)

// TestOwnAddresses: with the class's own address (Options.Own, from a
// pool) the frontends bind it transparent, and the HTTP frontend is
// there with no Ingress served, so the first Ingress changes map data
// only; without Own, no Ingress is no frontend.
func TestOwnAddresses(t *testing.T) {
	full := load(t, "basic")
	empty := full
	empty.Ingresses = nil
	own := []netip.Addr{netip.MustParseAddr("198.18.0.5")}
	for _, tc := range []struct {
		name      string
		in        Input
		own       bool
		frontends int // HTTP frontends
		served    bool
	}{
		{"own, no Ingress", empty, true, 1, false},
		{"own, Ingresses", full, true, 1, true},
		{"not own, no Ingress", empty, false, 0, false},
		{"not own, Ingresses", full, false, 1, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			res := Compile(tc.in, Options{Class: "haproxy", Addresses: own, Own: tc.own})
			n := 0
			for _, f := range res.Frontends {
				if f.Name == HTTPFrontend {
					n++
				}
				for _, b := range f.Binds {
					if b.Addr != own[0] || b.Transparent != tc.own {
						t.Errorf("%s binds %+v, want %s transparent=%v", f.Name, b, own[0], tc.own)
					}
				}
			}
			if n != tc.frontends {
				t.Errorf("%d HTTP frontends, want %d", n, tc.frontends)
			}
			if (len(res.Served) > 0) != tc.served {
				t.Errorf("served %v", res.Served)
			}
			for k, a := range res.Served {
				if len(a) != 1 || a[0] != own[0] {
					t.Errorf("%s served on %v", k, a)
				}
			}
		})
	}
}
