package gateway

// A table's update (tablememo.go) matches each served route's place with
// its place in the last table of the same listener, and refuses a
// listener where a route has two places in the new table (seenTwice).
// It did so with two maps of
// every route per listener per pass; at thousands of routes those maps
// were about a twentieth of a pass's CPU and a tenth of its
// allocation (issue 30).
// Instead each route carries marks, each valid while its stamp is the
// one the update uses: where the route was in the last table, and that
// it was seen in the new one. A stamp is used for one listener of one
// update and never again by that Memo. A place is taken only where the
// last table has the route there (a stale or foreign mark is no place),
// and a mark that says "twice" wrongly costs a whole table, never a
// wrong one.
//
// The slots themselves, one slice per listener of thousands, are reused
// every other pass (reslot): at a new route, they were a tenth of a
// pass's allocation.

// tabMarks are a route's marks.
type tabMarks struct {
	old  int // the stamp under which at holds
	at   int // its place among the last table's slots of the listener
	seen int // the stamp of the last listener update that saw it
}

// stamper hands out stamps, never 0 (a route's zero marks hold none).
type stamper struct{ n int }

func (s *stamper) next() int {
	s.n++
	return s.n
}

// markOld marks each route of the last table's slots with its place
// under stamp (a route there twice: its last place). The last table
// needs no refusal of its own: a route object's places on a listener
// change in number only with the Gateway or a ListenerSet, and a new
// one of those makes every fragment new (the memo's entries forgotten),
// so no place of the last table is kept then; otherwise a route twice
// in the last table is twice in the new one (seenTwice refuses it) or
// gone (its places not kept: their hosts built again).
// TestTableMemoRouteTwiceIsWhole.
func markOld(slots []tableSlot, stamp int) {
	for j := range slots {
		r := slots[j].r
		r.tab.old, r.tab.at = stamp, j
	}
}

// oldPlace is r's place among slots, marked under stamp by markOld.
func oldPlace(r *route, slots []tableSlot, stamp int) (int, bool) {
	if r.tab.old != stamp || r.tab.at >= len(slots) || slots[r.tab.at].r != r {
		return 0, false
	}
	return r.tab.at, true
}

// seenTwice marks r seen under stamp and reports whether it was already.
func seenTwice(r *route, stamp int) bool {
	if r.tab.seen == stamp {
		return true
	}
	r.tab.seen = stamp
	return false
}

// reslot is spare[i] emptied, to hold a listener's n slots, or a new
// slice with room for a few more: a table's slots are made once per
// listener and reused every other pass (the last pass's are compared
// with the new ones; those of the pass before are read by nothing).
func reslot(spare [][]tableSlot, i, n int) []tableSlot {
	if i < len(spare) && cap(spare[i]) >= n {
		s := spare[i][:cap(spare[i])]
		clear(s) // no route kept alive by a slot past the end
		return s[:0]
	}
	return make([]tableSlot, 0, n+n/64+8) // room: a new route each pass must not make them again
}

// slots are tm's slots per listener.
func (tm *tableMemo) slots() [][]tableSlot {
	out := make([][]tableSlot, len(tm.ls))
	for i, in := range tm.ls {
		out[i] = in.slots
	}
	return out
}
