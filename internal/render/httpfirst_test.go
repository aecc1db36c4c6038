package render

import "testing"

// TestFirstCallKeepsNoEdit: a memo's first table (and the first after
// the edits were forgotten) is only counted: its edit, every entry
// added, is unknown to callers and none is built or kept; the next
// call's edit is known and right.
func TestFirstCallKeepsNoEdit(t *testing.T) {
	const n = 200
	for _, tc := range []struct {
		name  string
		setup func(m *HTTPMapsMemo)
	}{
		{"a new memo", func(*HTTPMapsMemo) {}},
		{"after a nil table", func(m *HTTPMapsMemo) { m.Maps(idTable(n, nil, nil)); m.Maps(nil) }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			memo := &HTTPMapsMemo{}
			tc.setup(memo)
			first := memo.Maps(idTable(n, nil, nil))
			if edits, known := memo.Edits(); known || edits != nil {
				t.Fatalf("after the first table: edits %d kinds, known %v; want none, unknown", len(edits), known)
			}
			moved := idTable(n, nil, nil)
			moved.Hosts[n/2].Rules[0].Path = "/moved"
			checkEdits(t, memo, first, memo.Maps(moved))
		})
	}
}

// BenchmarkHTTPMapsMemoFirst: what a memo's first table allocates in
// all (the first pass of a controller at n routes) and keeps.
//
//	go test ./internal/render -run '^$' -bench BenchmarkHTTPMapsMemoFirst -benchmem
func BenchmarkHTTPMapsMemoFirst(b *testing.B) {
	table := idTable(10000, nil, nil)
	for b.Loop() {
		(&HTTPMapsMemo{}).Maps(table)
	}
}
