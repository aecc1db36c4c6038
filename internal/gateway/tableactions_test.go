package gateway

import (
	"reflect"
	"slices"
	"testing"

	"github.com/haproxy-k8s-sync/haproxy-k8s-sync/internal/model"
)

// tablesActions are copies of res's HTTP tables' actions.
func tablesActions(res Result) [][]model.HTTPAction {
	var out [][]model.HTTPAction
	for _, f := range res.Config.Frontends {
		if f.HTTP != nil {
			out = append(out, slices.Clone(f.HTTP.Actions))
		}
	}
	return out
}

// checkTablesKept: the last pass's tables still hold the actions they
// were made with (a table is never changed once made: the next pass
// shares their array, tableactions.go, and writes only past them).
func checkTablesKept(t *testing.T, step int, last Result, acts [][]model.HTTPAction) {
	t.Helper()
	if now := tablesActions(last); !reflect.DeepEqual(now, acts) {
		t.Fatalf("step %d: the last pass's table changed under it", step)
	}
}

// TestActionsOfSharesTheLastArray: places where they were share the last
// table's array, a place after them is written into its room past every
// length a table had, and anything else copies.
func TestActionsOfSharesTheLastArray(t *testing.T) {
	act := func(name string) []model.HTTPAction {
		return []model.HTTPAction{{Backends: []model.WeightedBackend{{Name: name, Weight: 1}}}}
	}
	base := make([]model.HTTPAction, 0, 8)
	base = append(append(base, act("a")...), act("b")...)
	for _, c := range []struct {
		name   string
		hw     int
		places [][]model.HTTPAction
		shared bool
		hw2    int
	}{
		{"the same places", 2, [][]model.HTTPAction{base[0:1], base[1:2]}, true, 2},
		{"one added after them", 2, [][]model.HTTPAction{base[0:1], base[1:2], act("c")}, true, 3},
		{"the last one gone", 2, [][]model.HTTPAction{base[0:1]}, true, 2},
		{"added where an older table had one", 3, [][]model.HTTPAction{base[0:1], base[1:2], act("d")}, false, 3},
		{"the first one changed", 2, [][]model.HTTPAction{act("e"), base[1:2]}, false, 2},
	} {
		was := slices.Clone(base[:cap(base)])
		a := actionsOf{base: base, hw: c.hw, room: 10}
		var want []model.HTTPAction
		for _, p := range c.places {
			a.add(p)
			want = append(want, p...)
		}
		got := a.done()
		hw := a.hw
		if !reflect.DeepEqual(got, want) || hw != c.hw2 || (&got[0] == &base[:1][0]) != c.shared {
			t.Errorf("%s: %d actions, hw %d, shared %v; want %d, %d, %v", c.name, len(got), hw, &got[0] == &base[:1][0], len(want), c.hw2, c.shared)
		}
		if !reflect.DeepEqual(was[:max(c.hw, len(base))], base[:cap(base)][:max(c.hw, len(base))]) {
			t.Errorf("%s: an action a table holds was written", c.name)
		}
		clear(base[len(base):cap(base)]) // the room as it was, for the next case
	}
}
