package gateway

import (
	"maps"
	"slices"
	"testing"

	gwv1 "sigs.k8s.io/gateway-api/apis/v1"
)

// Over random edits (and status writes: a route's new object with its
// spec as it was), every route whose status entry is not the very slice
// of the pass before, whose entry came or went, or whose object is new,
// is in Result.RoutesChanged; and most routes are not.
func TestRoutesChangedIsTheDifference(t *testing.T) {
	for seed := range uint64(4) {
		m := newMemoWorld(seed)
		opts := Options{Routes: &RouteMemo{}, Memo: &Memo{}}
		var last Result
		var lastObjs map[RouteKey]*gwv1.HTTPRoute
		listed, steps := 0, 200
		for step := range steps {
			what := "start"
			switch {
			case step == 0:
			case m.rnd.IntN(4) == 0 && len(m.routes) > 0: // a status written: a new object, the spec as it was
				k := slices.Sorted(maps.Keys(m.routes))[m.rnd.IntN(len(m.routes))]
				r := m.routes[k].DeepCopy()
				r.Status.Parents = append(r.Status.Parents, gwv1.RouteParentStatus{ControllerName: "other.example.com/x"})
				m.routes[k] = r
				what = "status of route " + k
			default:
				what = m.edit()
			}
			opts.Addresses = m.lb
			in := m.input()
			res := Compute(in, opts)
			told := map[RouteKey]bool{}
			for _, k := range res.RoutesChanged {
				told[k] = true
			}
			objs := map[RouteKey]*gwv1.HTTPRoute{}
			for _, r := range in.HTTPRoutes {
				objs[RouteKey{KindHTTPRoute, Key{r.Namespace, r.Name}}] = r
			}
			if step > 0 {
				if res.Pass != last.Pass+1 {
					t.Fatalf("seed %d step %d: pass %d after %d", seed, step, res.Pass, last.Pass)
				}
				for _, k := range slices.Collect(maps.Keys(objs)) {
					if o, ok := lastObjs[k]; (!ok || o != objs[k]) && !told[k] {
						t.Fatalf("seed %d step %d (%s): route %v's object is new and it is not listed", seed, step, what, k)
					}
				}
				for _, rs := range []RouteStatuses{last.Routes, res.Routes} {
					for k := range rs.All() {
						was, had := last.Routes.Lookup(k)
						now, has := res.Routes.Lookup(k)
						if (had != has || !sameSlice(was, now)) && !told[k] {
							t.Fatalf("seed %d step %d (%s): route %v's status entry changed (%v -> %v) and it is not listed", seed, step, what, k, had, has)
						}
					}
				}
			}
			listed += len(res.RoutesChanged)
			last, lastObjs = res, objs
		}
		if limit := steps * len(m.routes) / 4; listed > limit {
			t.Errorf("seed %d: %d routes listed over %d passes of ~%d routes: want at most %d", seed, listed, steps, len(m.routes), limit)
		}
		t.Logf("seed %d: %d routes listed over %d passes of ~%d routes", seed, listed, steps, len(m.routes))
	}
}
