package render

import (
	"fmt"
	"testing"

	"github.com/haproxy-k8s-sync/haproxy-k8s-sync/internal/model"
)

// idTable is n routes, host r<i>.example.com, Exact /p<i> to its own
// split, prefix / to a shared backend; first is put before them.
func idTable(n int, first *model.HTTPHost, firstAction *model.HTTPAction) *model.HTTP {
	h := &model.HTTP{Port: 80}
	if first != nil {
		h.Actions = append(h.Actions, *firstAction)
		h.Hosts = append(h.Hosts, *first)
	}
	shared := len(h.Actions)
	h.Actions = append(h.Actions, model.HTTPAction{Backends: []model.WeightedBackend{{Name: "b", Weight: 1}}})
	for i := range n {
		h.Hosts = append(h.Hosts, model.HTTPHost{Name: fmt.Sprintf("r%d.example.com", i), Rules: []model.HTTPRule{
			{PathType: model.PathExact, Path: fmt.Sprintf("/p%d", i), Action: len(h.Actions)},
			{PathType: model.PathPrefix, Path: "/", Action: shared},
		}})
		h.Actions = append(h.Actions, model.HTTPAction{Backends: []model.WeightedBackend{{Name: "a", Weight: int32(1 + i%7)}, {Name: "b", Weight: 1}}})
	}
	return model.Shaped(h)
}

// entrySet is every entry of every kind, "kind key value".
func entrySet(h *model.HTTP) map[string]bool {
	out := map[string]bool{}
	for kind, es := range HTTPMaps(h) {
		for _, e := range es {
			k := kind + " " + e.Key + " " + e.Value
			if out[k] {
				panic("entry twice: " + k)
			}
			out[k] = true
		}
	}
	return out
}

// TestHTTPMapIDsByContent: the maps' ids are named by what they lead to,
// so a table changed in one route (or given a route before all others,
// which moves every position) differs from the old one in that route's
// entries only, whatever the table's size; the same content shares one
// id and one set of entries.
func TestHTTPMapIDsByContent(t *testing.T) {
	const n = 200
	newHost := &model.HTTPHost{Name: "new.example.com", Rules: []model.HTTPRule{{PathType: model.PathExact, Path: "/new", Action: 0}}}
	newAction := &model.HTTPAction{Backends: []model.WeightedBackend{{Name: "c", Weight: 1}}}
	moved := idTable(n, nil, nil)
	moved.Hosts[100].Rules[0].Path = "/moved"
	reweighted := idTable(n, nil, nil)
	reweighted.Actions[1+100].Backends[0].Weight = 50
	for _, tc := range []struct {
		name    string
		table   *model.HTTP
		maxDiff int // entries gone plus entries new
		minDiff int
	}{
		{"same", idTable(n, nil, nil), 0, 0},
		{"a route before all others", idTable(n, newHost, newAction), 4, 4},
		{"a path moved", moved, 6, 2},
		{"a split changed", reweighted, 60, 2}, // a new action: its backends by decimal prefixes
	} {
		t.Run(tc.name, func(t *testing.T) {
			old, got := entrySet(idTable(n, nil, nil)), entrySet(tc.table)
			diff := 0
			for e := range old {
				if !got[e] {
					diff++
				}
			}
			for e := range got {
				if !old[e] {
					diff++
				}
			}
			if diff < tc.minDiff || diff > tc.maxDiff {
				t.Errorf("%d entries differ, want %d..%d (of %d)", diff, tc.minDiff, tc.maxDiff, len(old))
			}
		})
	}
	// Hosts of the same rules share their id and entries.
	same := &model.HTTP{Port: 80, Actions: []model.HTTPAction{{Backends: []model.WeightedBackend{{Name: "a", Weight: 1}}}}}
	for _, name := range []string{"a.example.com", "b.example.com"} {
		same.Hosts = append(same.Hosts, model.HTTPHost{Name: name, Rules: []model.HTTPRule{{PathType: model.PathPrefix, Path: "/", Action: 0}}})
	}
	m := HTTPMaps(model.Shaped(same))
	if hs := m[HTTPHosts]; len(hs) != 2 || hs[0].Value != hs[1].Value || len(m[HTTPPrefix]) != 1 || len(m[HTTPMatch]) != 1 {
		t.Errorf("two hosts of the same rules: hosts %v, prefix %v, match %v", hs, m[HTTPPrefix], m[HTTPMatch])
	}
}

// TestContentIDCollision: two contents whose digits agree get distinct
// ids, each with its entries, the id put wherever they name it.
func TestContentIDCollision(t *testing.T) {
	ids := contentIDs{}
	out := map[string][]HTTPMapEntry{}
	p := &placer{ids: ids, out: out}
	a := p.place("a", map[string][]HTTPMapEntry{HTTPBackends: {{idHole + ":1", "x|" + idHole + ".b0"}}})
	// The same id, taken by another content: as a collision would.
	for id := range ids {
		ids[id] = [32]byte{1}
	}
	b := p.place("a", map[string][]HTTPMapEntry{HTTPBackends: {{idHole + ":1", "x|" + idHole + ".b0"}}})
	if a == b || len(b) != len(a) || len(out[HTTPBackends]) != 2 {
		t.Fatalf("ids %q and %q, entries %v", a, b, out[HTTPBackends])
	}
	// The id in keys and values alike.
	for i, id := range []string{a, b} {
		if e := out[HTTPBackends][i]; e.Key != id+":1" || e.Value != "x|"+id+".b0" {
			t.Errorf("entry %v, want the id %s in its key and value", e, id)
		}
	}
}
