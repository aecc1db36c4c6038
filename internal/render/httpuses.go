package render

// How many places of the memo's last table hold each lowered action or
// host (issue 30): kept from pass to pass and changed only at the places
// whose lowered thing differs from the last table's at that place, so a
// pass finds the actions and hosts that came and went (for the memo's
// content-keyed lookup and its edit list, httpedits.go) from what
// changed instead of comparing two maps of the whole table.
type useCounts struct {
	n      map[*lowered]int
	multi  int              // lowered things placing an unnamed entry, held at two places or more
	before map[*lowered]int // this pass: each one touched, its count before
	// touched is how many the last pass touched (for tests).
	touched int
}

// move is one place of the table going from old to cur (nil: none).
func (u *useCounts) move(old, cur *lowered) {
	if old == cur {
		return
	}
	if old != nil {
		u.add(old, -1)
	}
	if cur != nil {
		u.add(cur, 1)
	}
}

func (u *useCounts) add(l *lowered, d int) {
	if u.n == nil {
		u.n = map[*lowered]int{}
	}
	if u.before == nil {
		u.before = map[*lowered]int{}
	}
	c := u.n[l]
	if _, ok := u.before[l]; !ok {
		u.before[l] = c
	}
	if l.unnamed {
		switch {
		case c <= 1 && c+d > 1:
			u.multi++
		case c > 1 && c+d <= 1:
			u.multi--
		}
	}
	if c+d <= 0 {
		delete(u.n, l)
	} else {
		u.n[l] = c + d
	}
}

// settle ends a pass: the lowered things gone from the table (dropped
// from memo, the content-keyed lookup) and those new to it, appended.
func (u *useCounts) settle(memo map[string]*lowered, gone, came []*lowered) ([]*lowered, []*lowered) {
	for l, c0 := range u.before {
		c1 := u.n[l]
		switch {
		case c0 > 0 && c1 == 0:
			if memo[l.key] == l {
				delete(memo, l.key)
			}
			gone = append(gone, l)
		case c0 == 0 && c1 > 0:
			came = append(came, l)
		}
	}
	u.touched = len(u.before)
	clear(u.before)
	return gone, came
}
