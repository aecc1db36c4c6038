package gateway

import (
	"maps"
	"slices"
	"strings"
	"testing"

	gwv1 "sigs.k8s.io/gateway-api/apis/v1"
)

// journal is what the source's journal of HTTPRoute events tells a pass:
// the routes added, replaced or deleted between two snapshots.
type journal struct {
	at   uint64
	prev map[string]*gwv1.HTTPRoute // the last span's end
}

// span is the changes from the last span's end to snap, as (From, To].
func (j *journal) span(snap map[string]*gwv1.HTTPRoute) *ChangedRoutes {
	c := &ChangedRoutes{From: j.at, To: j.at + 1}
	ks := slices.Sorted(maps.Keys(snap))
	for k := range j.prev {
		if _, ok := snap[k]; !ok {
			ks = append(ks, k)
		}
	}
	for _, k := range ks {
		if j.prev[k] != snap[k] {
			ns, name, _ := strings.Cut(k, "/")
			c.Keys, c.Objs = append(c.Keys, Key{ns, name}), append(c.Objs, snap[k])
		}
	}
	j.at, j.prev = c.To, snap
	return c
}

// TestToldRoutesAreTheWalk: over random edits, a pass told the changed
// HTTPRoutes as the journal tells them gives what a pass computing every
// route gives, and takes the last pass's routes and the told ones (no
// lookup of every route) unless the span cannot be trusted: the first
// pass and a relist (All), a span that does not start where the last
// pass's ended (a snapshot taken and not computed), a pass not told and
// the one after it, counts that do not add up. Our own status writes
// echoed and keys told twice too.
func TestToldRoutesAreTheWalk(t *testing.T) {
	for seed := range uint64(4) {
		m := newMemoWorld(seed + 20)
		memo := &Memo{}
		withMemo := Options{Routes: &RouteMemo{}, Memo: memo}
		whole := Options{Routes: &RouteMemo{}}
		var j journal
		told, lastTold := 0, false
		for step := range 150 {
			what := "start"
			if step > 0 {
				what = m.edit()
			}
			if step > 0 && m.rnd.IntN(4) == 0 && len(m.routes) > 0 { // our status write echoed
				k := slices.Sorted(maps.Keys(m.routes))[m.rnd.IntN(len(m.routes))]
				r := *m.routes[k]
				r.Status.Parents = []gwv1.RouteParentStatus{{ControllerName: gwv1.GatewayController("x" + what)}}
				m.routes[k] = &r
				what += ", status of " + k
			}
			c := j.span(maps.Clone(m.routes))
			trust := step > 0 && lastTold
			switch x := m.rnd.IntN(12); {
			case step == 0 || x == 0:
				c.All, trust, what = true, false, what+", every route (a relist)"
			case x == 1 && len(m.routes) > 0:
				// A snapshot taken and not computed: this pass's span
				// starts where it ended, after another edit.
				what += ", a span skipped after " + m.edit()
				c = j.span(maps.Clone(m.routes))
				trust = false
			case x == 2:
				c, trust, what = nil, false, what+", not told"
			case x == 3 && len(c.Keys) > 0:
				c.Keys, c.Objs = append(c.Keys, c.Keys[0]), append(c.Objs, c.Objs[0]) // told twice
			}
			lastTold = c != nil
			withMemo.Addresses, whole.Addresses = m.lb, m.lb
			in := m.input()
			in.HTTPRouteChanges = c
			before, sweeps := memo.Told, memo.sweeps
			got, want := Compute(in, withMemo), Compute(in, whole)
			if d := firstDiff(got, want); d != "" {
				t.Fatalf("seed %d step %d (%s): the pass told the changed routes differs from the whole one: %s", seed, step, what, d)
			}
			if did := memo.Told > before; did != trust {
				t.Fatalf("seed %d step %d (%s): took the told routes %v, want %v", seed, step, what, did, trust)
			}
			if trust {
				told++
				if gone := slices.Contains(c.Objs, nil); memo.sweeps != sweeps && !gone {
					t.Fatalf("seed %d step %d (%s): a told pass deleting none walked every route kept", seed, step, what)
				}
			}
			if len(memo.routes) != len(m.routes) || len(memo.last) != len(m.routes) {
				t.Fatalf("seed %d step %d (%s): the memo keeps %d routes (%d listed) of %d", seed, step, what, len(memo.routes), len(memo.last), len(m.routes))
			}
		}
		if told < 90 {
			t.Errorf("seed %d: %d of 150 passes took the told routes: want most", seed, told)
		}
	}
}

// TestToldRoutesCountsAddUp: a span whose objects do not add up to the
// snapshot's count (a route the journal did not name) is not taken.
func TestToldRoutesCountsAddUp(t *testing.T) {
	m := newMemoWorld(7)
	memo := &Memo{}
	opts := Options{Routes: &RouteMemo{}, Memo: memo, Addresses: m.lb}
	var j journal
	in := m.input()
	in.HTTPRouteChanges = j.span(maps.Clone(m.routes))
	in.HTTPRouteChanges.All = true
	Compute(in, opts)
	for k, r := range m.routes { // a new route, its key not told
		c := *r
		c.Name += "-new"
		m.routes[strings.TrimSuffix(k, r.Name)+c.Name] = &c
		break
	}
	in = m.input()
	in.HTTPRouteChanges = &ChangedRoutes{From: j.at, To: j.at + 1}
	Compute(in, opts)
	if memo.Told != 0 || memo.Walked != 2 {
		t.Fatalf("told %d walked %d: want a walk when the counts differ", memo.Told, memo.Walked)
	}
}
