package tproxy

import (
	"context"
	"errors"
	"fmt"
	"net/netip"
	"slices"
	"testing"
	"time"

	"github.com/haproxy-k8s-sync/haproxy-k8s-sync/internal/driver"
	"github.com/haproxy-k8s-sync/haproxy-k8s-sync/internal/driver/runtimeapi"
	"github.com/haproxy-k8s-sync/haproxy-k8s-sync/internal/model"
	"github.com/haproxy-k8s-sync/haproxy-k8s-sync/internal/render"
	"github.com/haproxy-k8s-sync/haproxy-k8s-sync/internal/spares"
)

// TestServedWhileGrowthDeferred: a new Service that takes a free spare is
// served at once even when the same pass wants the pool to grow and the
// reload gate holds that growth back (driver.ErrDeferred): Ordered adds
// the set elements of what HAProxy serves already, not only after a pass
// that applied whole. A Service that waits for the growth gets no
// element (its map entry is not there yet), and is served by the growth's
// reload (here the first pass of a restarted controller, whose gate waits
// for nothing).
func TestServedWhileGrowthDeferred(t *testing.T) {
	l := startDPWith(t, render.ListenersTProxy, spares.Policy{Spares: 1, LowWater: 1})
	// A reload waits an hour for its changes to settle: every growth
	// after the first reload is held back for the whole test.
	hopts := l.hopts
	hopts.ReloadSettle = time.Hour
	hd := runtimeapi.NewHAProxy(hopts)
	t.Cleanup(func() { _ = hd.Close() })
	l.hd, l.drv.HAProxy = hd, hd
	ctx := context.Background()
	ap := netip.AddrPortFrom

	feA, beA := l.svc("a", bind(vipA, 80))
	cfg := model.Config{Frontends: []model.Frontend{feA}, Backends: []*model.Backend{beA}}
	l.apply(t, cfg)
	expect(t, map[netip.AddrPort]string{ap(vipA, 80): "a"}, l.lab.Client, netip.Addr{})
	before := l.reloads(t)

	// New Services, one a pass, each on an address and port of its own,
	// until one takes the last free spare of the class: the pool wants
	// to grow and the gate holds the growth back. That one is served
	// with no reload, its IPv6 address too.
	add := func(i int) (model.Config, netip.AddrPort, netip.AddrPort, string) {
		fe, be := l.svc("c", bind(vipB, uint16(100+i)), bind(vipA6, uint16(100+i)))
		fe.Name, fe.Service, fe.Backend = fmt.Sprintf("fe_n%d", i), fmt.Sprintf("default/n%d", i), fmt.Sprintf("be_n%d", i)
		be.Name, be.Service = fe.Backend, fe.Service
		next := model.Config{Frontends: append(slices.Clone(cfg.Frontends), fe), Backends: append(slices.Clone(cfg.Backends), be)}
		return next, ap(vipB, uint16(100+i)), ap(vipA6, uint16(100+i)), fe.Service
	}
	deferred := -1
	for i := range 8 {
		next, v4, v6, svc := add(i)
		_, err := l.drv.Apply(ctx, next)
		if err != nil && !errors.Is(err, driver.ErrDeferred) {
			t.Fatalf("%s: %v", svc, err)
		}
		cfg = next
		expect(t, map[netip.AddrPort]string{v4: "c", v6: "c"}, l.lab.Client, netip.Addr{})
		if err != nil {
			deferred = i
			break
		}
	}
	if deferred < 0 {
		t.Fatal("8 new Services, yet the pool never wanted to grow: the test no longer exercises a deferred growth")
	}
	if after := l.reloads(t); after != before {
		t.Fatalf("new Services in free spares reloaded HAProxy: %d reloads, want %d", after, before)
	}

	// The next finds no free spare: it waits for the growth, with no
	// element; the others keep theirs.
	withWaiting, waitV4, _, waitSvc := add(deferred + 1)
	res, err := l.drv.Apply(ctx, withWaiting)
	if !errors.Is(err, driver.ErrDeferred) {
		t.Fatalf("%s with no free spare: err %v, want the pool's growth deferred", waitSvc, err)
	}
	if !slices.ContainsFunc(res.Refused, func(r driver.Refusal) bool {
		return r.Service == waitSvc && r.Reason == runtimeapi.ReasonWaitingForSpare
	}) {
		t.Errorf("%s with no free spare: refused %v, want %s", waitSvc, res.Refused, runtimeapi.ReasonWaitingForSpare)
	}
	v4s, _ := elementsOf(l.drv.Kernel)
	_, lastV4, _, _ := add(deferred)
	if slices.Contains(v4s, waitV4) || !slices.Contains(v4s, lastV4) {
		t.Errorf("the set holds %v: want %s (served) and not %s (waiting for a spare)", v4s, lastV4, waitV4)
	}
	expect(t, map[netip.AddrPort]string{waitV4: "", lastV4: "c", ap(vipA, 80): "a"}, l.lab.Client, netip.Addr{})
	if after := l.reloads(t); after != before {
		t.Fatalf("%s reloaded HAProxy while the growth is held back: %d reloads, want %d", waitSvc, after, before)
	}

	// A restarted controller's first pass reloads at once: the pool
	// grows and the one waiting is served.
	hopts.ReloadSettle = 0
	l.restart(t, hopts)
	l.apply(t, withWaiting)
	expect(t, map[netip.AddrPort]string{waitV4: "c", lastV4: "c", ap(vipA, 80): "a"}, l.lab.Client, netip.Addr{})
}

// elementsOf reads back the sets' elements of k, sorted.
func elementsOf(k *Driver) (v4, v6 []netip.AddrPort) {
	k.mu.Lock()
	defer k.mu.Unlock()
	for e := range k.readBack() {
		if e.Addr().Is4() {
			v4 = append(v4, e)
		} else {
			v6 = append(v6, e)
		}
	}
	slices.SortFunc(v4, netip.AddrPort.Compare)
	slices.SortFunc(v6, netip.AddrPort.Compare)
	return v4, v6
}
