package model

import "testing"

// TestSorted: a Config's frontends and backends are sorted by name, each
// name once; anything else is not (the memos then take the pass whole).
func TestSorted(t *testing.T) {
	for _, tc := range []struct {
		name  string
		names []string
		want  bool
	}{
		{"none", nil, true},
		{"one", []string{"a"}, true},
		{"sorted", []string{"a", "b", "c"}, true},
		{"out of order", []string{"a", "c", "b"}, false},
		{"first out of order", []string{"b", "a", "c"}, false},
		{"twice", []string{"a", "b", "b", "c"}, false},
		{"twice at the end", []string{"a", "c", "c"}, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var fs []Frontend
			var bs []*Backend
			for _, n := range tc.names {
				fs = append(fs, Frontend{Name: n})
				bs = append(bs, &Backend{Name: n})
			}
			if got := FrontendsSorted(fs); got != tc.want {
				t.Errorf("FrontendsSorted(%v) = %v, want %v", tc.names, got, tc.want)
			}
			if got := BackendsSorted(bs); got != tc.want {
				t.Errorf("BackendsSorted(%v) = %v, want %v", tc.names, got, tc.want)
			}
		})
	}
}
