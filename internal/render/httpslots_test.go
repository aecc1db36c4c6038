package render

import (
	"crypto/sha256"
	"testing"
)

// TestAddLoweredStampsIDs: an id's entries are added once per call
// (the same content placed twice), and an id given by two contents in
// the memo's table is a collision (fits false) while both are held; a
// call stamped later adds the id again.
func TestAddLoweredStampsIDs(t *testing.T) {
	sumA, sumB := sha256.Sum256([]byte("a")), sha256.Sum256([]byte("b"))
	m := &HTTPMapsMemo{}
	low := func(sum [sha256.Size]byte, value string) *lowered {
		l := &lowered{places: []placement{{id: "a1", sum: sum, groups: []kindEntries{{HTTPBackends, []HTTPMapEntry{{"a1", value}}, kindIndex(HTTPBackends)}}}}}
		m.intern(l)
		return l
	}
	a, a2 := low(sumA, "x"), low(sumA, "x")
	for _, c := range []struct {
		name    string
		pass    uint64
		add     []*lowered
		entries int
	}{
		{"one content twice: its entries once", 1, []*lowered{a, a2}, 1},
		{"again in the next call", 2, []*lowered{a2}, 1},
	} {
		out := make(kindLists, len(HTTPMapKinds))
		for _, l := range c.add {
			addLowered(out, c.pass, l)
		}
		if got := out[kindIndex(HTTPBackends)]; len(got) != c.entries {
			t.Errorf("%s: %d entries, want %d", c.name, len(got), c.entries)
		}
	}
	if !m.fits() {
		t.Fatal("one content placed twice: a collision")
	}
	b := low(sumB, "y")
	if m.fits() {
		t.Fatal("two contents of one id held: no collision")
	}
	if n := m.idTab["a1"].refs; n != 3 {
		t.Fatalf("slot a1 given by %d placements, want 3", n)
	}
	m.release([]*lowered{b})
	if !m.fits() {
		t.Fatal("the other content gone: still a collision")
	}
	b = low(sumB, "y")
	m.release([]*lowered{a, a2})
	if m.idTab["a1"] == nil {
		t.Fatal("slot a1 dropped while b still gives it")
	}
	m.release([]*lowered{b})
	if len(m.idTab) != 0 || !m.fits() {
		t.Fatalf("slots left after every lowered thing gone: %v (clashes %d)", m.idTab, m.clashes)
	}
}

// checkSlots: the memo's slots are the ids its last table's actions and
// hosts give, each counted once per placement (no slot of a content gone).
func checkSlots(t *testing.T, pass int, m *HTTPMapsMemo) {
	t.Helper()
	held := map[*lowered]bool{}
	for _, s := range m.seenA {
		held[s.l] = true
	}
	for _, s := range m.seenH {
		held[s.l] = true
	}
	refs := map[string]int{}
	for l := range held {
		if l == nil {
			continue
		}
		for _, pl := range l.places {
			if pl.id != "" {
				refs[pl.id]++
				if pl.slot != m.idTab[pl.id] {
					t.Fatalf("pass %d: id %s placed with a slot not the memo's", pass, pl.id)
				}
			}
		}
	}
	if len(refs) != len(m.idTab) {
		t.Fatalf("pass %d: %d slots held for %d ids in the table", pass, len(m.idTab), len(refs))
	}
	for id, n := range refs {
		if m.idTab[id].refs != n {
			t.Fatalf("pass %d: slot %s counts %d placements, the table has %d", pass, id, m.idTab[id].refs, n)
		}
	}
}

// TestHTTPMapContent: a map file is one "key value" line per entry, in
// order, and its bytes are allocated once, at their size.
func TestHTTPMapContent(t *testing.T) {
	for _, c := range []struct {
		entries []HTTPMapEntry
		want    string
	}{
		{nil, ""},
		{[]HTTPMapEntry{{"a.example.com", "h1"}}, "a.example.com h1\n"},
		{[]HTTPMapEntry{{"k", "v w"}, {"a1", ""}}, "k v w\na1 \n"},
	} {
		got := HTTPMapContent(c.entries)
		if string(got) != c.want || cap(got) != len(got) {
			t.Errorf("HTTPMapContent(%v) = %q (cap %d), want %q at its size", c.entries, got, cap(got), c.want)
		}
	}
}
