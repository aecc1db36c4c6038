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
// the content it stood for then, and how many held placements give it.
type idSlot struct {
	stamp uint64
	sum   [sha256.Size]byte
	refs  int
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
			s = &idSlot{}
			m.idTab[pl.id] = s
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
			if pl.slot == nil {
				continue
			}
			if pl.slot.refs--; pl.slot.refs == 0 {
				delete(m.idTab, pl.id)
			}
		}
	}
}

// fits reports whether no id of the memo's table stands for two
// contents (addLowered would report false): a walk of the table's
// places that adds nothing.
func (m *HTTPMapsMemo) fits() bool {
	m.pass++
	check := func(l *lowered) bool {
		for i := range l.places {
			pl := &l.places[i]
			if s := pl.slot; s != nil {
				if s.stamp == m.pass {
					if s.sum != pl.sum {
						return false
					}
					continue
				}
				s.stamp, s.sum = m.pass, pl.sum
			}
		}
		return true
	}
	for _, s := range m.seenA {
		if !check(s.l) {
			return false
		}
	}
	for _, s := range m.seenH {
		if !check(s.l) {
			return false
		}
	}
	return true
}

// addLowered adds l's placements to out, each id once in the call
// stamped pass, and reports false when an id stands for another content
// in this call already.
func addLowered(out kindLists, pass uint64, l *lowered) bool {
	for i := range l.places {
		pl := &l.places[i]
		if s := pl.slot; s != nil {
			if s.stamp == pass {
				if s.sum != pl.sum {
					return false
				}
				continue
			}
			s.stamp, s.sum = pass, pl.sum
		}
		for _, g := range pl.groups {
			out[g.ki] = append(out[g.ki], g.entries...)
		}
	}
	return true
}
