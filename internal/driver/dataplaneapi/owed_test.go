package dataplaneapi

import (
	"context"
	"fmt"
	"maps"
	"net/netip"
	"slices"
	"testing"
	"time"

	"github.com/haproxy-k8s-sync/haproxy-k8s-sync/internal/dataplane/dataplanetest"
	"github.com/haproxy-k8s-sync/haproxy-k8s-sync/internal/model"
	"github.com/haproxy-k8s-sync/haproxy-k8s-sync/internal/plan"
)

// nodeAt is the address of node n of trackedCfg (0-based).
func nodeAt(n int) netip.Addr { return netip.AddrFrom4([4]byte{127, 81, 40, byte(n + 1)}) }

// edited is cfg with node a's state set by node (nil: gone, else its
// server in _nodes), and in the Services for which keep says so, a server
// on a (at the Service's port) or none.
func edited(cfg model.Config, a netip.Addr, node *model.Server, keep func(i int) bool) model.Config {
	out := model.Config{Backends: slices.Clone(cfg.Backends)}
	nb := *out.Backends[0]
	nb.Servers = slices.DeleteFunc(slices.Clone(nb.Servers), func(s model.Server) bool { return s.Addr == a })
	if node != nil {
		nb.Servers = append(nb.Servers, *node)
		slices.SortFunc(nb.Servers, func(x, y model.Server) int { return x.Key().Compare(y.Key()) })
	}
	out.Backends[0] = &nb
	for i := 1; i < len(out.Backends); i++ {
		b := out.Backends[i]
		has := slices.ContainsFunc(b.Servers, func(s model.Server) bool { return s.Addr == a })
		if want := keep(i - 1); want == has {
			continue
		}
		nbe := *b
		if has {
			nbe.Servers = slices.DeleteFunc(slices.Clone(b.Servers), func(s model.Server) bool { return s.Addr == a })
		} else {
			nbe.Servers = append(slices.Clone(b.Servers), model.Server{Addr: a, Port: uint16(30000 + i - 1)})
			slices.SortFunc(nbe.Servers, func(x, y model.Server) int { return x.Key().Compare(y.Key()) })
		}
		out.Backends[i] = &nbe
	}
	return out
}

// wantRunsExactly checks that every Service backend of cfg runs, as
// HAProxy serves it, exactly its servers whose node is in service.
func wantRunsExactly(t *testing.T, srv *dataplanetest.Server, cfg model.Config, step string) {
	t.Helper()
	down := map[netip.Addr]bool{}
	for _, s := range cfg.Backends[0].Servers {
		down[s.Addr] = s.Maint
	}
	for _, b := range cfg.Backends[1:] {
		running, _ := srv.Running(b.Name)
		got, want := map[string]bool{}, map[string]bool{}
		for _, r := range running {
			if r.Admin == "ready" {
				got[fmt.Sprintf("%s:%d", r.Address, r.Port)] = true
			}
		}
		for _, s := range b.Servers {
			if !down[s.Addr] {
				want[s.Key().String()] = true
			}
		}
		if !maps.Equal(got, want) {
			t.Fatalf("%s: %s runs %v, want %v", step, b.Name, got, want)
		}
	}
}

// A node deleted is one runtime request whatever the number of Services
// it served: its slot in _nodes goes to maintenance and every server
// following it inherits that, while the API cannot give those followers
// a maintenance of their own (it takes "maint" for a follower only when
// it reads otherwise). They never serve again meanwhile: no other node
// takes the deleted node's slot until a reload, and when the node
// returns, its followers that are to stay out are put in maintenance
// right after it. A new controller converges, and a reload clears it all.
func TestNodeDeletedOwesFollowers(t *testing.T) {
	d, srv := fastDriver(t)
	ctx := context.Background()
	cfg := trackedCfg(40, -1, false, nil)
	apply(t, d, cfg)
	pass := func(step string, c model.Config, maxOps int) {
		t.Helper()
		res, err := d.Apply(ctx, c)
		if err != nil || res.Reloaded {
			t.Fatalf("%s: reloaded %v (%v), err %v", step, res.Reloaded, res.Reasons, err)
		}
		if res.Ops > maxOps {
			t.Errorf("%s: %d runtime requests, want at most %d", step, res.Ops, maxOps)
		}
		wantRunsExactly(t, srv, c, step)
		cfg = c
	}
	served := func(a netip.Addr) func(int) bool {
		return func(i int) bool { return slices.Contains([]int{0, 1, 2, 3, 4}, (int(a.As4()[3])-1-i%20+20)%20) }
	}
	three := nodeAt(3)
	// Node 3 (in 10 of the 40 Services) deleted: one request.
	pass("node deleted", edited(cfg, three, nil, func(int) bool { return false }), 1)
	if len(d.owed) != 10 {
		t.Errorf("%d followers owed, want 10", len(d.owed))
	}
	// A new node joins every fourth Service: it does not take node 3's
	// slot, whose followers would serve at node 3's address.
	newNode := netip.AddrFrom4([4]byte{127, 81, 40, 30})
	pass("another node joins", edited(cfg, newNode, &model.Server{Addr: newNode}, func(i int) bool { return i%4 == 0 }), 2*10+2)
	if sl := d.layout[model.NodesBackend][3]; sl.Used || !sl.Held {
		// Else the followers of s4 would serve at node 3's address, for
		// as long as it takes to put them in maintenance after it.
		t.Errorf("node 3's slot after another node joined: %+v, want free and held", sl)
	}
	// Node 3 returns, in half of its Services: those serve again with no
	// request; the others are put in maintenance once it is in service.
	back := served(three)
	half := func(i int) bool { return back(i) && i%2 == 0 }
	pass("node returns", edited(cfg, three, &model.Server{Addr: three}, half), 1+6)
	if len(d.owed) != 0 {
		t.Errorf("%d followers still owed once their node is back", len(d.owed))
	}
	// Excluded, then a Service's server on it goes, then it is back.
	five := nodeAt(5)
	pass("node excluded", edited(cfg, five, &model.Server{Addr: five, Maint: true}, served(five)), 1)
	noFirst := func(i int) bool { return served(five)(i) && i != 1 }
	pass("a server of it goes", edited(cfg, five, &model.Server{Addr: five, Maint: true}, noFirst), 0)
	pass("node included", edited(cfg, five, &model.Server{Addr: five}, noFirst), 2)
	// Deleted again, then a new controller: it converges with no reload
	// and nothing to do at its second pass, and lets no follower serve.
	pass("node deleted again", edited(cfg, five, nil, func(int) bool { return false }), 1)
	if err := d.Flush(ctx); err != nil {
		t.Fatal(err)
	}
	fresh := New(Options{Client: d.c, ReloadPoll: time.Millisecond})
	defer fresh.Close()
	for i, want := range []int{-1, 0} {
		res, err := fresh.Apply(ctx, cfg)
		if err != nil || res.Reloaded || (want >= 0 && res.Ops != want) {
			t.Fatalf("a new controller's pass %d: reloaded %v (%v) ops %d err %v", i+1, res.Reloaded, res.Reasons, res.Ops, err)
		}
	}
	wantRunsExactly(t, srv, cfg, "a new controller")
	if len(fresh.owed) == 0 {
		t.Errorf("a new controller takes no follower of the deleted node for owed")
	}
	d = fresh
	pass("another node joins again", edited(cfg, netip.AddrFrom4([4]byte{127, 81, 40, 31}), &model.Server{Addr: netip.AddrFrom4([4]byte{127, 81, 40, 31})}, func(i int) bool { return i%4 == 1 }), 2*10+2)
	// A reload (a setting changed) gives the followers their own
	// maintenance from the configuration: nothing is owed any more.
	next := model.Config{Backends: slices.Clone(cfg.Backends)}
	b := *next.Backends[7]
	b.TimeoutServer = time.Minute
	next.Backends[7] = &b
	if res, err := d.Apply(ctx, next); err != nil || !res.Reloaded {
		t.Fatalf("a setting changed: reloaded %v, err %v", res.Reloaded, err)
	}
	cfg = next
	wantRunsExactly(t, srv, cfg, "after a reload")
	if len(d.owed) != 0 {
		t.Errorf("%d followers owed after a reload", len(d.owed))
	}
	pass("node 5 returns", edited(cfg, five, &model.Server{Addr: five}, func(int) bool { return false }), 1)
}

// Nodes joining while a deleted node's slot is held take the other free
// slots of _nodes; once only the held one is left, the next node needs a
// reload (the _nodes backend sized anew), which gives the followers their
// own maintenance and ends the hold.
func TestHeldNodeSlotExhausted(t *testing.T) {
	d, srv := fastDriver(t)
	ctx := context.Background()
	cfg := trackedCfg(8, -1, false, nil)
	apply(t, d, cfg)
	free := plan.SlotsFor(20) - 20
	cfg = edited(cfg, nodeAt(3), nil, func(int) bool { return false })
	apply(t, d, cfg)
	for n := range free {
		a := netip.AddrFrom4([4]byte{127, 81, 42, byte(n + 1)})
		cfg = edited(cfg, a, &model.Server{Addr: a}, func(i int) bool { return i == n%8 })
		res, err := d.Apply(ctx, cfg)
		if err != nil || res.Reloaded {
			t.Fatalf("node %d of %d joining: reloaded %v (%v), err %v", n+1, free, res.Reloaded, res.Reasons, err)
		}
		wantRunsExactly(t, srv, cfg, fmt.Sprintf("node %d joined", n+1))
	}
	a := netip.AddrFrom4([4]byte{127, 81, 42, 200})
	cfg = edited(cfg, a, &model.Server{Addr: a}, func(i int) bool { return i == 0 })
	res, err := d.Apply(ctx, cfg)
	if err != nil || !res.Reloaded {
		t.Fatalf("a node joining with only the held slot free: reloaded %v, err %v; want a reload", res.Reloaded, err)
	}
	wantRunsExactly(t, srv, cfg, "after the reload")
	if len(d.owed) != 0 {
		t.Errorf("%d followers owed after the reload", len(d.owed))
	}
	cfg = edited(cfg, nodeAt(3), &model.Server{Addr: nodeAt(3)}, func(i int) bool { return i == 3 })
	apply(t, d, cfg)
	wantRunsExactly(t, srv, cfg, "the deleted node back after the reload")
}
