package gateway

import (
	"slices"

	"github.com/haproxy-k8s-sync/haproxy-k8s-sync/internal/model"
)

// A table's update place by place (issue 30). A new route (the
// youngest: after every other place) or a route changed in place (a new
// object, as old as the last: at its place, with as many actions) leaves
// every other place of the listener as it was, its route, fragment,
// names, age and first action's place the same. update matched each
// place with the last table's by its route (marking every route of the
// last table, then looking each new place's up, then comparing the
// places again to index them: three walks of every route, each writing
// to it). When the places are the last table's place by place but a few
// (at most maxInPlace), the few alone are indexed again and their hosts
// built again (the others' rules are the last table's: what a host's
// rules are built from, its places in the index and their slots, did not
// change); a place of the few that matches through any host or a
// wildcard, or more of them, is left to update's matching by route
// (which moves places, and builds the whole table when many changed). So
// is a place added or given more actions on a listener before another of
// the port's: the later listener's actions move, each of its places
// differs.
// TestTableMemoIsTheWholeTable compares the result with the whole
// computation's; TestTablePlaceByPlace checks the way is taken.

// maxInPlace is the most places that may differ.
const maxInPlace = 8

// placeByPlace brings the index to slots and puts the hosts to build
// again into dirty, when slots are the last table's place by place but
// a few; false (the index unchanged, dirty perhaps not empty) otherwise.
func (tm *tableMemo) placeByPlace(slots [][]tableSlot, dirty map[string]bool) bool {
	type place struct{ l, j int }
	var diff [maxInPlace]place
	nd := 0
	for i, in := range tm.ls {
		old, ss := in.slots, slots[i]
		for j := range max(len(old), len(ss)) {
			if j < len(old) && j < len(ss) && old[j].same(&ss[j]) {
				continue
			}
			if nd == maxInPlace {
				return false
			}
			diff[nd] = place{i, j}
			nd++
		}
	}
	mark := func(hs []string) bool {
		for _, h := range hs {
			if notExact(h) { // tablesplice.go
				return false
			}
			dirty[h] = true
		}
		return true
	}
	for _, d := range diff[:nd] {
		old, ss := tm.ls[d.l].slots, slots[d.l]
		if d.j < len(old) && !mark(old[d.j].hosts()) || d.j < len(ss) && !mark(ss[d.j].hosts()) {
			clear(dirty)
			return false
		}
	}
	for _, d := range diff[:nd] { // ascending by listener, then place
		in, ss := tm.ls[d.l], slots[d.l]
		if d.j < len(in.slots) {
			for _, h := range in.slots[d.j].hosts() {
				in.unindex(h, d.j)
			}
		}
		if d.j < len(ss) {
			for _, h := range ss[d.j].hosts() {
				in.index(h, d.j)
			}
		}
	}
	for i, in := range tm.ls {
		in.slots = slots[i] // the last slots' array is reused (reslot)
	}
	return true
}

// lastFragment is fragment(a, ...) when the last table's place at a's
// place (was) holds a's route with its entry of this pass, the one f
// was taken from (an entry is made anew when what its route reads
// changed), and the same names, in a table of the same scheme: f, its
// backends put into backends; nil otherwise. No lookup of the entry's
// fragments by frontend: at a place kept, a pass looked every route's
// fragment up again.
func (w *world) lastFragment(a *attachedRoute, was *tableSlot, backends map[string]*model.Backend) *fragment {
	e := a.r.e
	if was.r != a.r || was.e != e || e == nil || e.gen != w.memo.egen || e.pass != w.memo.pass || !sameNames(was.snis, a.snis) {
		return nil
	}
	for _, b := range was.f.backends {
		w.recent.put(backends, b) // backendsrecent.go
	}
	w.memo.Reused++
	return was.f
}

// sameNames: a and b hold the same names (the same array: at once).
func sameNames(a, b []string) bool {
	return len(a) == len(b) && (len(a) == 0 || &a[0] == &b[0]) || slices.Equal(a, b)
}
