package tproxy

import (
	"context"
	"fmt"
	"net/netip"
	"testing"
	"time"

	"github.com/haproxy-k8s-sync/haproxy-k8s-sync/internal/driver/runtimeapi"
	"github.com/haproxy-k8s-sync/haproxy-k8s-sync/internal/model"
	"github.com/haproxy-k8s-sync/haproxy-k8s-sync/internal/testing/netlab"
)

func pfx(s ...string) []netip.Prefix {
	var out []netip.Prefix
	for _, p := range s {
		out = append(out, netip.MustParsePrefix(p))
	}
	return out
}

// TestSourceRanges: two Services on one address with different source
// ranges; each is checked against its own, in its backend, behind the
// shared listener, and a change of ranges is no reload.
func TestSourceRanges(t *testing.T) {
	l := startDP(t)
	feA, beA := l.svc("a", bind(vipA, 80), bind(vipA6, 80))
	feB, beB := l.svc("b", bind(vipA, 443))
	feA.SourceRanges = pfx("192.0.2.10/32", "2001:db8::2/128")
	feB.SourceRanges = pfx("192.0.2.11/32")
	cfg := model.Config{Frontends: []model.Frontend{feA, feB}, Backends: []*model.Backend{beA, beB}}
	l.apply(t, cfg)
	ap := netip.AddrPortFrom
	c10, c11 := netip.MustParseAddr("192.0.2.10"), netip.MustParseAddr("192.0.2.11")
	expect(t, map[netip.AddrPort]string{ap(vipA, 80): "a", ap(vipA, 443): ""}, l.lab.Client, c10)
	expect(t, map[netip.AddrPort]string{ap(vipA, 80): "", ap(vipA, 443): "b"}, l.lab.Client, c11)
	expect(t, map[netip.AddrPort]string{ap(vipA6, 80): "a"}, l.lab.Client, netip.Addr{})

	before := l.reloads(t)
	feA.SourceRanges = pfx("192.0.2.11/32")
	cfg.Frontends = []model.Frontend{feA, feB}
	l.apply(t, cfg)
	expect(t, map[netip.AddrPort]string{ap(vipA, 80): "", ap(vipA6, 80): ""}, l.lab.Client, c10)
	expect(t, map[netip.AddrPort]string{ap(vipA, 80): "a"}, l.lab.Client, c11)
	if after := l.reloads(t); after != before {
		t.Errorf("a change of source ranges reloaded: %d reloads, want %d", after, before)
	}
}

// askProxy connects to dst, sends a PROXY v1 header naming src as the
// client, and returns the first line answered.
func askProxy(ns string, src, dst netip.AddrPort) (string, error) {
	c, err := netlab.DialTCP(ns, netip.Addr{}, dst)
	if err != nil {
		return "", err
	}
	fam := "TCP4"
	if src.Addr().Is6() {
		fam = "TCP6"
	}
	return netlab.FirstLine(c, fmt.Sprintf("PROXY %s %s %s %d %d\r\n", fam, src.Addr(), dst.Addr(), src.Port(), dst.Port()))
}

// TestProxyProtocol: an address and port whose Service accepts the PROXY
// protocol reads the header (and checks the client it names against the
// source ranges); another on the same address does not; turning it on for
// a key is no reload.
func TestProxyProtocol(t *testing.T) {
	l := startDP(t)
	feA, beA := l.svc("a", bind(vipA, 80))
	feB, beB := l.svc("b", bind(vipA, 443))
	feB.AcceptProxy, feB.SourceRanges = true, pfx("198.51.100.7/32")
	cfg := model.Config{Frontends: []model.Frontend{feA, feB}, Backends: []*model.Backend{beA, beB}}
	l.apply(t, cfg)
	ap := netip.AddrPortFrom
	poll := func(what string, fn func() error) {
		t.Helper()
		if err := netlab.Eventually(context.Background(), 5*time.Second, fn); err != nil {
			t.Errorf("%s: %v", what, err)
		}
	}
	poll("PROXY header of an allowed client", func() error {
		got, err := askProxy(l.lab.Client, netip.MustParseAddrPort("198.51.100.7:5555"), ap(vipA, 443))
		if got != "b" {
			return fmt.Errorf("got %q (%v), want b", got, err)
		}
		return nil
	})
	poll("PROXY header of a client outside the ranges", func() error {
		if got, _ := askProxy(l.lab.Client, netip.MustParseAddrPort("198.51.100.8:5555"), ap(vipA, 443)); got != "" {
			return fmt.Errorf("got %q, want refused", got)
		}
		return nil
	})
	poll("no PROXY protocol on the same address's other port", func() error {
		if got, err := ask(l.lab.Client, netip.Addr{}, ap(vipA, 80)); got != "a" {
			return fmt.Errorf("got %q (%v), want a", got, err)
		}
		return nil
	})
	before := l.reloads(t)
	feA.AcceptProxy = true
	cfg.Frontends = []model.Frontend{feA, feB}
	l.apply(t, cfg)
	poll("PROXY protocol turned on", func() error {
		got, err := askProxy(l.lab.Client, netip.MustParseAddrPort("198.51.100.9:5555"), ap(vipA, 80))
		if got != "a" {
			return fmt.Errorf("got %q (%v), want a", got, err)
		}
		return nil
	})
	poll("a connection without the header once it is on", func() error {
		if got, _ := ask(l.lab.Client, netip.Addr{}, ap(vipA, 80)); got != "" {
			return fmt.Errorf("got %q, want nothing before a header", got)
		}
		return nil
	})
	if after := l.reloads(t); after != before {
		t.Errorf("turning the PROXY protocol on reloaded: %d reloads, want %d", after, before)
	}
}

// TestRestartConverges: a controller that starts again (a new driver of
// each kind, as after a kill between the map's write and the set's) reads
// back the set and writes the map, and ends with the two in agreement;
// the policy routing removed behind its back comes back after Invalidate.
func TestRestartConverges(t *testing.T) {
	l := startDP(t)
	feA, beA := l.svc("a", bind(vipA, 80))
	cfg := model.Config{Frontends: []model.Frontend{feA}, Backends: []*model.Backend{beA}}
	l.apply(t, cfg)
	ap := netip.AddrPortFrom
	expect(t, map[netip.AddrPort]string{ap(vipA, 80): "a"}, l.lab.Client, netip.Addr{})

	// A kill after HAProxy's driver wrote a new entry and before the set
	// took its element: the entry is there, the element not.
	more := cfg
	feA.Binds = append(feA.Binds, bind(vipB, 80))
	more.Frontends = []model.Frontend{feA}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	if _, err := l.drv.HAProxy.Apply(ctx, more); err != nil {
		t.Fatal(err)
	}
	expect(t, map[netip.AddrPort]string{ap(vipB, 80): ""}, l.lab.Client, netip.Addr{})
	// The controller starts again: both drivers new, what runs read
	// back; the model is the same structure, so no reload either.
	before := l.reloads(t)
	k, err := New(Options{NetNS: netlab.Path(l.lab.LB), Render: l.ropts})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(k.Close)
	hd := runtimeapi.NewHAProxy(l.hopts)
	t.Cleanup(func() { _ = hd.Close() })
	l.drv = Ordered{HAProxy: hd, Kernel: k}
	l.apply(t, more)
	expect(t, map[netip.AddrPort]string{ap(vipA, 80): "a", ap(vipB, 80): "a"}, l.lab.Client, netip.Addr{})
	if after := l.reloads(t); after != before {
		t.Errorf("the controller's restart reloaded HAProxy: %d reloads, want %d", after, before)
	}

	// The policy routing and the table deleted behind the controller's
	// back (another tool, a flush): Invalidate (every resync) puts them back.
	if err := Cleanup(netlab.Path(l.lab.LB), Options{}); err != nil {
		t.Fatal(err)
	}
	expect(t, map[netip.AddrPort]string{ap(vipA, 80): ""}, l.lab.Client, netip.Addr{})
	l.drv.Invalidate()
	l.apply(t, more)
	expect(t, map[netip.AddrPort]string{ap(vipA, 80): "a", ap(vipB, 80): "a"}, l.lab.Client, netip.Addr{})
	// After a resync with nothing changed behind its back, a pass sends
	// nothing; twice is the same.
	l.drv.Invalidate()
	if res, err := l.drv.Kernel.Apply(ctx, more); err != nil || res.Ops != 0 {
		t.Errorf("a pass after Invalidate with nothing changed: %d ops, %v; want none", res.Ops, err)
	}
	if res, err := l.drv.Kernel.Apply(ctx, more); err != nil || res.Ops != 0 {
		t.Errorf("applying the same model again: %d ops, %v; want none", res.Ops, err)
	}
}
