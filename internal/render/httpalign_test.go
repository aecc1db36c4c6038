package render

import (
	"reflect"
	"slices"
	"testing"

	"github.com/haproxy-k8s-sync/haproxy-k8s-sync/internal/model"
)

// TestHTTPMapsMemoHostsAligned: a new route's host put among the others
// (as the compiler's ordered table puts it), a host gone from among them,
// a host changed in place: every other host and every action is taken
// by identity (no key built), only the changed host and action lowered,
// and only their places' counts moved, whatever the table's size; the
// maps and edits are HTTPMaps's.
func TestHTTPMapsMemoHostsAligned(t *testing.T) {
	const n = 200
	t0 := idTable(n, nil, nil)
	gone := model.Shaped(&model.HTTP{Port: t0.Port, Actions: t0.Actions, Hosts: slices.Delete(slices.Clone(t0.Hosts), 50, 51)})
	changed := &model.HTTP{Port: t0.Port, Actions: t0.Actions, Hosts: slices.Clone(t0.Hosts)}
	changed.Hosts[n/2].Rules = []model.HTTPRule{{PathType: model.PathExact, Path: "/changed", Action: 0}}
	model.Shaped(changed)
	twoNew := newRouteTable(newRouteTable(t0, 10), n-10)
	memo := &HTTPMapsMemo{}
	var last map[string][]HTTPMapEntry
	for i, tc := range []struct {
		name          string
		table         *model.HTTP
		same, lowered int // actions and hosts taken by identity; lowered
		touched       int // lowered hosts whose count of places moved, at most
	}{
		{"first", t0, 0, 8 + n, 2*n + 1},
		{"a new route in the middle", newRouteTable(t0, n/2), 2*n + 1, 1, 1},
		{"that route gone", t0, 2*n + 1, 0, 1},
		{"a route gone from the middle", gone, 2*n + 1 - 1, 0, 1},
		{"back", t0, 2*n + 1 - 1, 1, 1},
		{"a host changed in place", changed, 2*n + 1 - 1, 1, 2},
		{"back again", t0, 2*n + 1 - 1, 1, 2},
		{"two new routes", twoNew, 2*n + 1, 2, 2},
		{"both gone", t0, 2*n + 1, 0, 2},
	} {
		got, want := memo.Maps(tc.table), HTTPMaps(tc.table)
		if !reflect.DeepEqual(got, want) {
			t.Fatalf("%s: the memo's maps differ from HTTPMaps's", tc.name)
		}
		if i > 0 {
			checkEdits(t, memo, last, got)
		}
		last = got
		if memo.Same != tc.same || memo.Lowered != tc.lowered {
			t.Errorf("%s: %d taken by identity and %d lowered, want %d and %d", tc.name, memo.Same, memo.Lowered, tc.same, tc.lowered)
		}
		if i > 0 && memo.usesH.touched > tc.touched {
			t.Errorf("%s: %d hosts' counts of places moved, want at most %d", tc.name, memo.usesH.touched, tc.touched)
		}
	}
}
