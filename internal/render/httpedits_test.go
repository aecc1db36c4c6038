package render

import (
	"maps"
	"testing"
)

// checkEdits fails t unless the memo's edits, applied to the maps of
// its previous call (prev), give its last call's (got), kind by kind;
// unknown edits only where a map holds a key twice.
func checkEdits(t *testing.T, memo *HTTPMapsMemo, prev, got map[string][]HTTPMapEntry) {
	t.Helper()
	checkEditsIf(t, memo, prev, got, true)
}

// checkEditsIf is checkEdits; unknown edits pass unless mustKnow.
func checkEditsIf(t *testing.T, memo *HTTPMapsMemo, prev, got map[string][]HTTPMapEntry, mustKnow bool) {
	t.Helper()
	edits, known := memo.Edits()
	if !known && !mustKnow {
		return
	}
	if !known {
		for k, es := range got {
			if _, unique := asMap(es); !unique {
				return
			}
			if _, unique := asMap(prev[k]); !unique {
				return
			}
		}
		t.Fatalf("edits unknown, though every map's keys are unique")
	}
	for _, k := range HTTPMapKinds {
		m, _ := asMap(prev[k])
		e := edits[k]
		editMap(t, k, m, e.Add, e.Set, e.Del)
		if want, _ := asMap(got[k]); !maps.Equal(m, want) {
			t.Fatalf("%s: the previous map edited (%v) is\n%v\nwant\n%v", k, e, m, want)
		}
	}
}

// asMap is entries by key, and whether no key repeats.
func asMap(es []HTTPMapEntry) (map[string]string, bool) {
	m := make(map[string]string, len(es))
	unique := true
	for _, e := range es {
		if _, dup := m[e.Key]; dup {
			unique = false
		}
		m[e.Key] = e.Value
	}
	return m, unique
}

// editMap applies an edit to m, failing t when it adds a key m has, sets
// one it has not (or to the value it has) or deletes one it has not.
func editMap[E ~struct{ Key, Value string }](t *testing.T, what string, m map[string]string, add, set []E, del []string) {
	t.Helper()
	for _, e := range add {
		a := struct{ Key, Value string }(e)
		if _, had := m[a.Key]; had {
			t.Fatalf("%s: added %s, which the map had", what, a.Key)
		}
		m[a.Key] = a.Value
	}
	for _, e := range set {
		s := struct{ Key, Value string }(e)
		if old, had := m[s.Key]; !had || old == s.Value {
			t.Fatalf("%s: set %s to %s, which the map had not (%q, %v)", what, s.Key, s.Value, old, had)
		}
		m[s.Key] = s.Value
	}
	for _, d := range del {
		if _, had := m[d]; !had {
			t.Fatalf("%s: deleted %s, which the map had not", what, d)
		}
		delete(m, d)
	}
}
