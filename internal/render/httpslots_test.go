package render

import (
	"crypto/sha256"
	"testing"
)

// TestAddLoweredStampsIDs: an id's entries are added once per call, an
// id of two contents in one call is a collision, and the same id of
// another content in a later call is none (the call that added it then
// is over).
func TestAddLoweredStampsIDs(t *testing.T) {
	sumA, sumB := sha256.Sum256([]byte("a")), sha256.Sum256([]byte("b"))
	m := &HTTPMapsMemo{}
	low := func(sum [sha256.Size]byte, value string) *lowered {
		l := &lowered{places: []placement{{id: "a1", sum: sum, groups: []kindEntries{{HTTPBackends, []HTTPMapEntry{{"a1", value}}, kindIndex(HTTPBackends)}}}}}
		m.intern(l)
		return l
	}
	a, a2, b := low(sumA, "x"), low(sumA, "x"), low(sumB, "y")
	for _, c := range []struct {
		name    string
		pass    uint64
		add     []*lowered
		fits    bool
		entries int
	}{
		{"one content twice: its entries once", 1, []*lowered{a, a2}, true, 1},
		{"two contents, one id: a collision", 2, []*lowered{a, b}, false, 1},
		{"the other content in a later call", 3, []*lowered{b}, true, 1},
		{"and the first again in the next", 4, []*lowered{a2, a}, true, 1},
	} {
		out := make(kindLists, len(HTTPMapKinds))
		fits := true
		for _, l := range c.add {
			fits = fits && addLowered(out, c.pass, l)
		}
		if got := out[kindIndex(HTTPBackends)]; fits != c.fits || len(got) != c.entries {
			t.Errorf("%s: fits %v with %d entries, want %v with %d", c.name, fits, len(got), c.fits, c.entries)
		}
	}
	if n := m.idTab["a1"].refs; n != 3 {
		t.Fatalf("slot a1 given by %d placements, want 3", n)
	}
	m.release([]*lowered{a, a2})
	if m.idTab["a1"] == nil {
		t.Fatal("slot a1 dropped while b still gives it")
	}
	m.release([]*lowered{b})
	if len(m.idTab) != 0 {
		t.Fatalf("slots left after every lowered thing gone: %v", m.idTab)
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
