package tproxy

import (
	"context"
	"fmt"
	"net/netip"
	"testing"
	"time"

	"github.com/haproxy-k8s-sync/haproxy-k8s-sync/internal/model"
	"github.com/haproxy-k8s-sync/haproxy-k8s-sync/internal/render"
	"github.com/haproxy-k8s-sync/haproxy-k8s-sync/internal/spares"
	"github.com/haproxy-k8s-sync/haproxy-k8s-sync/internal/testing/netlab"
)

// TestNewServiceFromPool: with the fixed listener and a pool of spare
// backends, a new Service (a new address and port, a new backend) is a
// map entry, a set element, a spare's slots and, for a restricted one, the
// spare's source-range files (a spare of the class that checks sources):
// no reload, whether it is restricted or not. A restricted one refuses a
// client outside its ranges; a Service that later takes the spare
// another left finds none of its ranges; IPv4-mapped clients (a PROXY
// header's) are checked as IPv4 ones. Other: 3 keeps three free spares
// that check sources, so that no growth falls inside the test.
func TestNewServiceFromPool(t *testing.T) {
	l := startDPWith(t, render.ListenersTProxy, spares.Policy{Spares: 6, Other: 3, LowWater: 1})
	feA, beA := l.svc("a", bind(vipA, 80))
	cfg := model.Config{Frontends: []model.Frontend{feA}, Backends: []*model.Backend{beA}}
	l.apply(t, cfg)
	ap := netip.AddrPortFrom
	c10, c11 := netip.MustParseAddr("192.0.2.10"), netip.MustParseAddr("192.0.2.11")
	expect(t, map[netip.AddrPort]string{ap(vipA, 80): "a"}, l.lab.Client, c11)
	before := l.reloads(t)
	noReload := func(what string) {
		t.Helper()
		if after := l.reloads(t); after != before {
			t.Fatalf("%s reloaded HAProxy: %d reloads, want %d", what, after, before)
		}
	}

	// A new unrestricted Service and a new restricted one, each on an
	// address and port not served before.
	feB, beB := l.svc("b", bind(vipA, 443), bind(vipA6, 8080))
	feC, beC := l.svc("c", bind(vipB, 80), bind(vipA6, 80))
	feC.SourceRanges = pfx("192.0.2.10/32")
	cfg = model.Config{Frontends: []model.Frontend{feA, feB, feC}, Backends: []*model.Backend{beA, beB, beC}}
	l.apply(t, cfg)
	expect(t, map[netip.AddrPort]string{ap(vipA, 443): "b", ap(vipB, 80): "c", ap(vipA, 80): "a"}, l.lab.Client, c10)
	expect(t, map[netip.AddrPort]string{ap(vipA, 443): "b", ap(vipB, 80): "", ap(vipA, 80): "a"}, l.lab.Client, c11)
	// IPv6: b lets every client in, c none (its ranges are IPv4 only).
	expect(t, map[netip.AddrPort]string{ap(vipA6, 8080): "b", ap(vipA6, 80): ""}, l.lab.Client, netip.Addr{})
	noReload("a new unrestricted Service and a new restricted one")
	spareC := l.hd.HAProxyBackend(beC.Name)
	if _, ok := spares.SpareIndex(spareC); !ok {
		t.Fatalf("c's backend is served by %q, not a spare", spareC)
	}

	// c goes; then d, restricted too, comes and takes c's spare (the
	// lowest free one that checks sources): none of c's ranges is left.
	cfg = model.Config{Frontends: []model.Frontend{feA, feB}, Backends: []*model.Backend{beA, beB}}
	l.apply(t, cfg)
	expect(t, map[netip.AddrPort]string{ap(vipB, 80): ""}, l.lab.Client, c10)
	feD, beD := l.svc("d", bind(vipB, 443), bind(vipA6, 443))
	feD.SourceRanges = pfx("192.0.2.11/32", "2001:db8::/64")
	cfg = model.Config{Frontends: []model.Frontend{feA, feB, feD}, Backends: []*model.Backend{beA, beB, beD}}
	l.apply(t, cfg)
	if got := l.hd.HAProxyBackend(beD.Name); got != spareC {
		t.Fatalf("d took %q, want c's spare %q", got, spareC)
	}
	expect(t, map[netip.AddrPort]string{ap(vipB, 443): "d", ap(vipB, 80): ""}, l.lab.Client, c11)
	expect(t, map[netip.AddrPort]string{ap(vipB, 443): ""}, l.lab.Client, c10)
	expect(t, map[netip.AddrPort]string{ap(vipA6, 443): "d"}, l.lab.Client, netip.Addr{})
	noReload("a Service gone and another taking its spare")

	// IPv4-mapped clients (a PROXY header's ::ffff:a.b.c.d) are IPv4 ones:
	// an unrestricted Service's spare lets them in (0.0.0.0/0 in its IPv4
	// file), a restricted one only those in its IPv4 ranges.
	feE, beE := l.svc("c", bind(vipA6, 9000))
	feE.Name, feE.Service, feE.Backend, beE.Name = "fe_e", "default/e", "be_e", "be_e"
	feE.AcceptProxy = true
	feF, beF := l.svc("c", bind(vipA6, 9001))
	feF.Name, feF.Service, feF.Backend, beF.Name = "fe_f", "default/f", "be_f", "be_f"
	feF.AcceptProxy, feF.SourceRanges = true, pfx("198.51.100.0/24")
	cfg = model.Config{Frontends: []model.Frontend{feA, feB, feD, feE, feF}, Backends: []*model.Backend{beA, beB, beD, beE, beF}}
	l.apply(t, cfg)
	for _, tc := range []struct {
		src  string
		port uint16
		want string
	}{
		{"[::ffff:203.0.113.99]:5555", 9000, "c"},
		{"[2001:db8:9::1]:5555", 9000, "c"},
		{"[::ffff:198.51.100.7]:5555", 9001, "c"},
		{"[::ffff:203.0.113.99]:5555", 9001, ""},
		{"[2001:db8:9::1]:5555", 9001, ""},
	} {
		src, dst := netip.MustParseAddrPort(tc.src), ap(vipA6, tc.port)
		err := netlab.Eventually(context.Background(), 5*time.Second, func() error {
			if got, err := askProxy(l.lab.Client, src, dst); got != tc.want {
				return fmt.Errorf("client %s to %s: got %q (%v), want %q", src, dst, got, err, tc.want)
			}
			return nil
		})
		if err != nil {
			t.Error(err)
		}
	}
	noReload("two new Services reading PROXY headers")
}
