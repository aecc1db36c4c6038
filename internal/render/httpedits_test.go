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
		for _, a := range e.Add {
			if _, had := m[a.Key]; had {
				t.Fatalf("%s: added %s, which the map had", k, a.Key)
			}
			m[a.Key] = a.Value
		}
		for _, s := range e.Set {
			if old, had := m[s.Key]; !had || old == s.Value {
				t.Fatalf("%s: set %s to %s, which the map had not (%q, %v)", k, s.Key, s.Value, old, had)
			}
			m[s.Key] = s.Value
		}
		for _, d := range e.Del {
			if _, had := m[d]; !had {
				t.Fatalf("%s: deleted %s, which the map had not", k, d)
			}
			delete(m, d)
		}
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
