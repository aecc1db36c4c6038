package tproxy

import (
	"fmt"
	"maps"
	"math/rand/v2"
	"net/netip"
	"slices"
	"testing"

	"github.com/haproxy-k8s-sync/haproxy-k8s-sync/internal/model"
	"github.com/haproxy-k8s-sync/haproxy-k8s-sync/internal/testing/modeledit"
)

// TestWantSetRandomEdits: pass after pass of random edits to a model's
// frontends (Services added and removed, binds added, changed and
// dropped, a frontend routed, so no longer listened), each pass's Remove
// (no adds), then its Apply (every add, or only some: ApplyServed) to a
// stand-in for the kernel's set, and now and then the set changed behind
// the driver's back and read back: the wantSet's diff, looking at the
// elements that changed only, is the whole comparison's, and the set
// ends holding what the model listens. Half the passes say which
// frontends changed (model.FrontendChanges, desired's delta pass): the
// wantSet taken by those names is the whole walk's.
func TestWantSetRandomEdits(t *testing.T) {
	for _, seed := range []uint64{1, 2, 3, 4} {
		t.Run(fmt.Sprint("seed ", seed), func(t *testing.T) {
			r := rand.New(rand.NewPCG(seed, 29))
			var fs []model.Frontend
			for i := range 30 {
				fs = modeledit.Insert(fs, randomFront(r, i))
			}
			n := 1000
			newFront := func() model.Frontend { n++; return randomFront(r, n) }
			var w wantSet
			applied := map[netip.AddrPort]bool{}
			w.unknown()
			named := 0 // passes taken by the names that changed
			for pass := range 300 {
				prev := fs
				fs = modeledit.Frontends(r, fs, newFront, func() model.Bind { return randomListenBind(r) })
				cfg := model.Config{Frontends: fs}
				var fronts *model.FrontendChanges
				if r.IntN(2) == 0 { // as desired's delta pass says (model.FrontendChanges)
					fronts = &model.FrontendChanges{Base: prev, Of: fs, Names: model.ChangedFrontends(prev, fs)}
					named++
				}
				w.update(cfg, fronts, tproxyOpts)
				want := wholeWant(cfg)
				if !maps.Equal(w.count, want) {
					t.Fatalf("pass %d: counts %v, want %v", pass, w.count, want)
				}
				var whole wantSet
				whole.whole(cfg, tproxyOpts)
				if !slices.EqualFunc(w.fronts, whole.fronts, sameWantFront) {
					t.Fatalf("pass %d (named: %v): fronts %v, want %v", pass, fronts != nil, w.fronts, whole.fronts)
				}
				if r.IntN(20) == 0 { // changed behind our back, read back
					for e := range applied {
						if r.IntN(3) == 0 {
							delete(applied, e)
						}
					}
					applied[netip.MustParseAddrPort("192.0.2.99:1")] = true
					w.unknown()
				}
				served := func(e netip.AddrPort) bool { return e.Port()%3 != 0 }
				if r.IntN(2) == 0 {
					served = func(netip.AddrPort) bool { return true }
				}
				for _, add := range []func(netip.AddrPort) bool{func(netip.AddrPort) bool { return false }, served} {
					del, adds := w.diff(applied, add)
					wd, wa := wholeDiff(applied, want, add)
					if !slices.Equal(sortedAPs(del), wd) || !slices.Equal(sortedAPs(adds), wa) {
						t.Fatalf("pass %d: diff %v %v, whole %v %v", pass, sortedAPs(del), sortedAPs(adds), wd, wa)
					}
					for _, e := range del {
						delete(applied, e)
					}
					for _, e := range adds {
						applied[e] = true
					}
					w.settled(applied)
				}
			}
			if named == 0 {
				t.Fatal("no pass said which frontends changed")
			}
		})
	}
}

func sameWantFront(a, b wantFront) bool {
	return a.name == b.name && a.backend == b.backend && a.traits == b.traits &&
		a.listened == b.listened && slices.Equal(a.binds, b.binds)
}

func wholeWant(cfg model.Config) map[netip.AddrPort]int {
	out := map[netip.AddrPort]int{}
	for _, f := range cfg.Frontends {
		if tproxyOpts.Listened(f) {
			for _, b := range f.Binds {
				out[netip.AddrPortFrom(b.Addr, b.Port)]++
			}
		}
	}
	return out
}

func wholeDiff(applied map[netip.AddrPort]bool, want map[netip.AddrPort]int, add func(netip.AddrPort) bool) (del, adds []netip.AddrPort) {
	for e := range applied {
		if want[e] == 0 {
			del = append(del, e)
		}
	}
	for e := range want {
		if add(e) && !applied[e] {
			adds = append(adds, e)
		}
	}
	return sortedAPs(del), sortedAPs(adds)
}

func sortedAPs(s []netip.AddrPort) []netip.AddrPort {
	s = slices.Clone(s)
	slices.SortFunc(s, netip.AddrPort.Compare)
	return s
}

func randomFront(r *rand.Rand, i int) model.Frontend {
	return model.Frontend{Name: fmt.Sprintf("fe-%04d", i), Backend: "be", Binds: []model.Bind{randomListenBind(r)}}
}

func randomListenBind(r *rand.Rand) model.Bind {
	addrs := []string{"203.0.113.10", "203.0.113.11", "2001:db8:1::10"}
	return model.Bind{Addr: netip.MustParseAddr(addrs[r.IntN(len(addrs))]), Port: uint16(80 + r.IntN(40)), Transparent: true}
}
