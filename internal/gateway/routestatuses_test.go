package gateway

import (
	"maps"
	"reflect"
	"strconv"
	"testing"

	gwv1 "sigs.k8s.io/gateway-api/apis/v1"
)

// TestRouteStatusesBuild: a build from earlier statuses holds what the
// same edits give a plain map, leaves the earlier statuses as they were,
// and copies only the shards it changes (the others are the earlier
// ones' very maps).
func TestRouteStatusesBuild(t *testing.T) {
	key := func(i int) RouteKey { return RouteKey{KindHTTPRoute, Key{"apps", "r" + strconv.Itoa(i)}} }
	sts := func(reason string) []gwv1.RouteParentStatus {
		return []gwv1.RouteParentStatus{{ControllerName: ControllerName, Conditions: []metavCondition{{Type: "Accepted", Reason: reason}}}}
	}
	type edit struct {
		k   RouteKey
		sts []gwv1.RouteParentStatus // empty: removed
	}
	base := map[RouteKey][]gwv1.RouteParentStatus{}
	for i := range 500 {
		base[key(i)] = sts("Accepted")
	}
	alone := RouteKey{KindGRPCRoute, Key{"other", "alone"}} // the one entry of its shard in "one"
	for _, c := range []struct {
		name  string
		from  map[RouteKey][]gwv1.RouteParentStatus
		edits []edit
	}{
		{"nothing", base, nil},
		{"one changed", base, []edit{{key(7), sts("Changed")}}},
		{"one added", base, []edit{{key(900), sts("Accepted")}}},
		{"one removed", base, []edit{{key(3), nil}}},
		{"an absent one removed", base, []edit{{key(901), nil}}},
		{"several", base, []edit{{key(1), nil}, {key(2), sts("X")}, {key(1), sts("Y")}, {key(902), sts("Z")}, {key(2), nil}}},
		{"into the empty", nil, []edit{{key(1), sts("A")}, {key(2), sts("B")}}},
		{"a shard emptied and filled again", map[RouteKey][]gwv1.RouteParentStatus{alone: sts("A")}, []edit{{alone, nil}, {alone, sts("B")}}},
		{"every one removed", map[RouteKey][]gwv1.RouteParentStatus{key(1): sts("A"), key(2): sts("B")}, []edit{{key(1), nil}, {key(2), nil}}},
	} {
		t.Run(c.name, func(t *testing.T) {
			from := RouteStatusesOf(c.from)
			before := from.Map()
			want := maps.Clone(c.from)
			if want == nil {
				want = map[RouteKey][]gwv1.RouteParentStatus{}
			}
			touched := map[int]bool{}
			b := routeStatusBuild{s: from}
			for _, e := range c.edits {
				b.put(e.k, e.sts)
				if len(e.sts) == 0 {
					delete(want, e.k)
				} else {
					want[e.k] = e.sts
				}
				touched[shardOf(e.k)] = true
			}
			got := b.done()
			if !reflect.DeepEqual(got.Map(), want) || got.Len() != len(want) {
				t.Errorf("built %d entries %v, want %d %v", got.Len(), got.Map(), len(want), want)
			}
			for k, v := range want {
				if g, ok := got.Lookup(k); !ok || !reflect.DeepEqual(g, v) {
					t.Errorf("%v: got %v %v, want %v", k, g, ok, v)
				}
			}
			if !reflect.DeepEqual(from.Map(), before) {
				t.Errorf("the earlier statuses changed")
			}
			if len(want) == 0 && got.sh != nil {
				t.Errorf("empty statuses hold shards")
			}
			if got.sh == nil || from.sh == nil {
				return
			}
			for i := range routeShards {
				if !touched[i] && reflect.ValueOf(got.sh[i]).UnsafePointer() != reflect.ValueOf(from.sh[i]).UnsafePointer() {
					t.Errorf("shard %d copied, though no edit touched it", i)
				}
			}
		})
	}
}

// TestRouteStatusesEqual: statuses with the same entries are deeply
// equal however they were built (the memo's pass and a whole one are
// compared so), empty ones included.
func TestRouteStatusesEqual(t *testing.T) {
	a := RouteStatusesOf(map[RouteKey][]gwv1.RouteParentStatus{{KindHTTPRoute, Key{"a", "x"}}: {{ControllerName: ControllerName}}})
	b := RouteStatuses{}.With(RouteKey{KindHTTPRoute, Key{"a", "y"}}, []gwv1.RouteParentStatus{{ControllerName: ControllerName}})
	b = b.With(RouteKey{KindHTTPRoute, Key{"a", "x"}}, []gwv1.RouteParentStatus{{ControllerName: ControllerName}})
	b = b.With(RouteKey{KindHTTPRoute, Key{"a", "y"}}, nil)
	if !reflect.DeepEqual(a, b) {
		t.Errorf("the same entries built two ways differ: %+v %+v", a.Map(), b.Map())
	}
	if e := a.With(RouteKey{KindHTTPRoute, Key{"a", "x"}}, nil); !reflect.DeepEqual(e, RouteStatuses{}) {
		t.Errorf("emptied statuses are not the zero value")
	}
}
