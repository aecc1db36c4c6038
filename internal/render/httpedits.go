package render

import (
	"cmp"
	"slices"
)

// The memo's edit list (issue 30): what each kind's map gained, changed
// and lost from the memo's previous table to its last, found from the
// actions and hosts that came and went (each entry counted by the
// lowered actions and hosts that place it: an id two hosts share stays
// while one of them does), not by comparing the tables. A route changed
// among thousands is then an edit of that route's entries, and the
// driver can hand it to HAProxy without diffing whole files
// (runtimeapi/httpmaps.go).

// HTTPMapEdit is one kind's change: keys added, keys whose value
// changed, keys deleted, each sorted by key.
type HTTPMapEdit struct {
	Add, Set []HTTPMapEntry
	Del      []string
}

// Empty reports whether e changes nothing.
func (e HTTPMapEdit) Empty() bool { return len(e.Add)+len(e.Set)+len(e.Del) == 0 }

// entryRef is an entry of the last table and how many lowered actions
// and hosts (or the listeners' and passthrough names' lists) place it.
type entryRef struct {
	value string
	n     int
}

// memoEdits is the memo's count of the last table's entries and the
// edit that led to it.
type memoEdits struct {
	refs      map[string]map[string]*entryRef // by kind, by key; nil: unknown
	listeners *lowered                        // the listeners' and passthrough names' entries, as one lowered thing
	edits     map[string]HTTPMapEdit          // by kind, only kinds that changed
	known     bool
}

// Edits returns, by kind, the edit from the memo's previous table to the
// last one (kinds that did not change are absent), and false when it is
// not known: the first call, a call after one whose table the memo could
// not count (nil, ids of two contents, a host twice), or such a call.
func (m *HTTPMapsMemo) Edits() (map[string]HTTPMapEdit, bool) {
	return m.ed.edits, m.ed.known
}

// forgetEdits makes the edits and counts unknown (HTTPMaps's result).
func (m *HTTPMapsMemo) forgetEdits() { m.ed = memoEdits{} }

// countEdits updates the counts from the previous call's lowered
// actions and hosts to this call's (gone: in the previous table only;
// came: in this one only), and the edits.
func (m *HTTPMapsMemo) countEdits(gone, came []*lowered, listeners, pass []HTTPMapEntry) {
	lis := &lowered{places: []placement{{groups: []kindEntries{{kind: HTTPListeners, entries: slices.Clone(listeners), ki: kindIndex(HTTPListeners)}, {kind: HTTPPass, entries: slices.Clone(pass), ki: kindIndex(HTTPPass)}}}}}
	prevL := m.ed.listeners
	// The first call (or the first after the edits were forgotten) only
	// counts: its edit would be every entry added, which no caller can
	// use (Edits reports it unknown), and at a first pass of thousands
	// of routes the keys noted for it and the sorted lists were a large
	// part of the pass's peak memory.
	first := m.ed.refs == nil
	if first {
		m.ed = memoEdits{refs: map[string]map[string]*entryRef{}}
		prevL, gone, came = nil, nil, nil // everything in this table came
		for _, u := range []useCounts{m.usesA, m.usesH} {
			for l := range u.n {
				came = append(came, l)
			}
		}
	} else {
		m.ed.known = true
	}
	if prevL != nil && slices.Equal(prevL.places[0].groups[0].entries, listeners) && slices.Equal(prevL.places[0].groups[1].entries, pass) {
		lis = prevL
	}
	m.ed.listeners = lis
	type at struct{ kind, key string }
	before := map[at]*string{} // the value of each key touched before this call, nil: absent
	each := func(l *lowered, f func(kind string, e HTTPMapEntry)) {
		for _, pl := range l.places {
			for _, g := range pl.groups {
				for _, e := range g.entries {
					f(g.kind, e)
				}
			}
		}
	}
	touch := func(kind, key string) *entryRef {
		r := m.ed.refs[kind][key]
		if first {
			return r
		}
		if _, ok := before[at{kind, key}]; !ok {
			var v *string
			if r != nil {
				old := r.value
				v = &old
			}
			before[at{kind, key}] = v
		}
		return r
	}
	drop := func(l *lowered) {
		each(l, func(kind string, e HTTPMapEntry) {
			if r := touch(kind, e.Key); r != nil {
				if r.n--; r.n <= 0 {
					delete(m.ed.refs[kind], e.Key)
				}
			}
		})
	}
	conflict := false
	take := func(l *lowered) {
		each(l, func(kind string, e HTTPMapEntry) {
			r := touch(kind, e.Key)
			switch {
			case r == nil:
				if m.ed.refs[kind] == nil {
					m.ed.refs[kind] = map[string]*entryRef{}
				}
				m.ed.refs[kind][e.Key] = &entryRef{value: e.Value, n: 1}
			case r.value != e.Value:
				conflict = true // a key of two values: HTTPMaps writes both
			default:
				r.n++
			}
		})
	}
	for _, l := range gone {
		drop(l)
	}
	if prevL != nil && prevL != lis {
		drop(prevL)
	}
	for _, l := range came {
		take(l)
	}
	if prevL != lis {
		take(lis)
	}
	if conflict {
		m.forgetEdits()
		return
	}
	if first {
		return // m.ed.edits nil, m.ed.known false
	}
	edits := map[string]HTTPMapEdit{}
	for a, old := range before {
		r := m.ed.refs[a.kind][a.key]
		e := edits[a.kind]
		switch {
		case old == nil && r != nil:
			e.Add = append(e.Add, HTTPMapEntry{a.key, r.value})
		case old != nil && r == nil:
			e.Del = append(e.Del, a.key)
		case old != nil && *old != r.value:
			e.Set = append(e.Set, HTTPMapEntry{a.key, r.value})
		default:
			continue
		}
		edits[a.kind] = e
	}
	for k, e := range edits {
		byKey := func(a, b HTTPMapEntry) int { return cmp.Compare(a.Key, b.Key) }
		slices.SortFunc(e.Add, byKey)
		slices.SortFunc(e.Set, byKey)
		slices.Sort(e.Del)
		edits[k] = e
	}
	m.ed.edits = edits
}
