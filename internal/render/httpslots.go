package render

import "crypto/sha256"

// The memo's ids kept from call to call (issue 30): a table adds each
// id's entries once, at its first place, and an id standing for two
// contents in one table is a collision the memo does not reproduce
// (HTTPMaps numbers the later one). Each id the held actions and hosts
// place has one slot, found when the content is lowered; a call stamps
// the slots it adds, so it asks no map per entry and builds no table of
// the ids: a pass over thousands of routes only reads its slots.

// idSlot is one id: the call that last added its entries, the digest of
// the content it stood for when it was first placed, how many held
// placements give it, and how many of those of another digest (a
// collision: HTTPMaps numbers one of them apart).
type idSlot struct {
	stamp uint64
	sum   [sha256.Size]byte
	refs  int
	odd   int
}

// intern gives each of l's ids its slot.
func (m *HTTPMapsMemo) intern(l *lowered) {
	if m.idTab == nil {
		m.idTab = map[string]*idSlot{}
	}
	for i := range l.places {
		pl := &l.places[i]
		if pl.id == "" {
			continue
		}
		s := m.idTab[pl.id]
		if s == nil {
			s = &idSlot{sum: pl.sum}
			m.idTab[pl.id] = s
		} else if s.sum != pl.sum {
			if s.odd == 0 {
				m.clashes++
			}
			s.odd++
		}
		s.refs++
		pl.slot = s
	}
}

// release drops the slots that only the lowered things gone from the
// table gave.
func (m *HTTPMapsMemo) release(gone []*lowered) {
	for _, l := range gone {
		for _, pl := range l.places {
			s := pl.slot
			if s == nil {
				continue
			}
			if s.sum != pl.sum {
				if s.odd--; s.odd == 0 {
					m.clashes--
				}
			}
			if s.refs--; s.refs == 0 {
				delete(m.idTab, pl.id)
			}
		}
	}
}

// fits reports whether no id of the memo's table stands for two
// contents: no slot is given by placements of two digests. Every
// placement a slot counts is of the table (release drops those gone),
// so this needs no walk of the table. It may say false where the
// contents of another digest are all that is left of a slot (the first
// gone): Build then gives HTTPMaps's maps, and the edit is unknown,
// which is never wrong; a collision of 48 bits is that rare.
func (m *HTTPMapsMemo) fits() bool { return m.clashes == 0 }

// addLowered adds l's placements to out, each id once in the call
// stamped pass (fits: every placement of an id is of one content).
func addLowered(out kindLists, pass uint64, l *lowered) {
	for i := range l.places {
		pl := &l.places[i]
		if s := pl.slot; s != nil {
			if s.stamp == pass {
				continue
			}
			s.stamp = pass
		}
		for _, g := range pl.groups {
			out[g.ki] = append(out[g.ki], g.entries...)
		}
	}
}
