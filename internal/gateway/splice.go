package gateway

import (
	"cmp"
	"slices"
	"sort"

	gwv1 "sigs.k8s.io/gateway-api/apis/v1"
)

// A spliced pass (issue 30): a pass whose input is the last pass's but
// for a few HTTPRoutes (added, deleted, changed, their status written)
// is the last pass's with those routes spliced in and out, every other
// route left untouched. A pass attaching every route (replayed from the
// memo or not), noting its status and laying out its table walked the
// thousands of routes three times over; a spliced pass does the changed
// routes' work alone:
//
//   - the listeners' lists of routes are the last pass's, kept
//     (keepListenerRoutes), each gone route's claims taken out at their
//     places (found by a binary search: a list is in the routes' order,
//     older), each new route attached (attach, recorded) and its
//     claims put in at theirs;
//   - the statuses are the last result's, the changed routes' noted
//     (noteRoute), the deleted ones' removed;
//   - an HTTP table is the last one changed at the changed places alone
//     (tablesplice.go) when none moves another, else built by tableOf's
//     walk from the spliced lists.
//
// It applies when the last pass recorded every route's attachment on
// listeners where a route's claim depends on no other route (HTTP, or
// status only: attachmemo.go), nothing but HTTPRoutes are attached (a
// TCP, TLS or UDP listener's oldest route wins, and those routes are
// not kept), and nothing else changed: the memo's world and listener
// signature are the last pass's and no Service or EndpointSlice
// differs. Otherwise, or past maxSplice new and gone routes, the pass
// attaches every route as before. The precedence rules stay where they
// are (httproute.go, the order in older, claim); a splice only puts
// each route where they put it. The result is the whole pass's
// (TestSpliceIsTheWholeCompute).

// maxSplice is the most routes a spliced pass adds and removes.
const maxSplice = 16

// spliceState says whether the next pass may splice: the lists kept are
// this pass's whole, every route's attachment recorded in the memo's
// world egen and listeners lgen.
type spliceState struct {
	ok         bool
	egen, lgen int
}

// listEdit is a listener's list changed by a splice: its length before,
// the places taken out (in the list before) and put in (in the list
// after), ascending.
type listEdit struct {
	before   int
	rem, ins []int
}

// spliceRoutes attaches the pass's routes as the last pass's with the
// changed ones spliced in and out, notes their statuses into sb, and
// reports it; false (no list changed, sb untouched): the pass attaches
// every route.
func (w *world) spliceRoutes(in Input, gws map[Key]*gw, controller string, sb *routeStatusBuild) bool {
	m := w.memo
	if m == nil || m.noSplice || !m.on || w.lindex == nil || !m.splice.ok || m.splice.egen != m.egen || m.splice.lgen != m.lgen ||
		len(m.changed) > 0 || len(m.lroutes) != len(w.lall) ||
		len(in.TCPRoutes)+len(in.TLSRoutes)+len(in.UDPRoutes)+len(in.GRPCRoutes) > 0 {
		return false
	}
	gone := m.goneNow
	if m.nSeen < len(m.routes) { // deleted: their objects not seen (a walk of the kept routes, only then)
		for _, r := range m.routes {
			if r.seen != m.pass {
				if gone = append(gone, r); len(gone) > maxSplice {
					return false
				}
			}
		}
	}
	var fresh, restated []*route
	for _, r := range m.madeNow {
		if r.e == nil {
			fresh = append(fresh, r)
		} else {
			restated = append(restated, r) // a stand-in: the last object's route (worldmemo.go)
		}
	}
	if len(fresh)+len(gone) > maxSplice {
		return false
	}
	type place struct{ l, j int }
	var rem []place
	for _, g := range gone {
		e := g.e
		if e == nil || e.gen != m.egen || e.att == nil || e.att.lgen != m.lgen || !distinctListeners(e.att.claims) {
			return false
		}
		for _, c := range e.att.claims {
			j, ok := placeOf(m.lroutes[c.l], g)
			if !ok {
				return false
			}
			rem = append(rem, place{c.l, j})
		}
	}
	for _, r := range restated {
		if e := m.entry(r, w); e == nil || e.att == nil || e.att.lgen != m.lgen {
			return false
		}
	}
	// The new routes attached to empty lists: their claims (attach
	// records them), nothing else's.
	for _, l := range w.lall {
		l.routes, l.attached = nil, 0
	}
	sts := make([][]gwv1.RouteParentStatus, len(fresh))
	for i, r := range fresh {
		if r.ks == "" {
			r.ks = r.key.String()
		}
		sts[i] = w.attached(r, gws, controller)
		if e := r.e; r.kept || e == nil || e.att == nil || e.att.lgen != m.lgen || !distinctListeners(e.att.claims) {
			for _, l := range w.lall {
				l.routes, l.attached = nil, 0
			}
			return false
		}
	}
	// Nothing declines from here: the lists are changed.
	lists := m.lroutes
	w.edits = map[int]*listEdit{}
	edit := func(l int) *listEdit {
		ed := w.edits[l]
		if ed == nil {
			ed = &listEdit{before: len(lists[l])}
			w.edits[l] = ed
		}
		return ed
	}
	for _, p := range rem {
		ed := edit(p.l)
		ed.rem = append(ed.rem, p.j)
	}
	slices.SortFunc(rem, func(a, b place) int { return cmp.Or(cmp.Compare(a.l, b.l), cmp.Compare(b.j, a.j)) })
	for _, p := range rem { // each list's places from the last: the others' stay where they are
		lists[p.l] = slices.Delete(lists[p.l], p.j, p.j+1)
	}
	for _, r := range fresh {
		for _, c := range r.e.att.claims {
			edit(c.l)
			j, _ := placeOf(lists[c.l], r)
			lists[c.l] = slices.Insert(lists[c.l], j, c.a)
		}
	}
	for _, r := range fresh {
		for _, c := range r.e.att.claims {
			j, _ := placeOf(lists[c.l], r)
			w.edits[c.l].ins = append(w.edits[c.l].ins, j)
		}
	}
	for _, ed := range w.edits {
		slices.Sort(ed.rem)
		slices.Sort(ed.ins)
	}
	for i, l := range w.lall {
		l.routes, l.attached = lists[i], int32(len(lists[i]))
	}
	// The statuses: the new and restated routes' noted, the deleted
	// ones' removed (a route replaced by a new object of its name is
	// noted as that object).
	for i, r := range fresh {
		if m.noteRoute(r, sts[i]) {
			sb.put(r.key, sts[i])
		}
	}
	for _, r := range restated {
		if s := r.e.att.sts; m.noteRoute(r, s) {
			sb.put(r.key, s)
		}
	}
	for _, g := range gone {
		if m.byKey[g.key].r == g { // deleted: no object of its name now
			m.delta = append(m.delta, g.key)
			sb.put(g.key, nil)
		}
	}
	m.Spliced++
	m.SpliceKept += m.nSeen - len(m.madeNow)
	return true
}

// placeOf is where route r is, or would be, in list (in the routes'
// order), and whether r is there.
func placeOf(list []*attachedRoute, r *route) (int, bool) {
	j := sort.Search(len(list), func(i int) bool { return older(list[i].r.meta, r.meta, list[i].r.ks, r.ks) >= 0 })
	return j, j < len(list) && list[j].r == r
}

// distinctListeners: no two claims on one listener (a route there
// twice, by two parentRefs: not spliced).
func distinctListeners(cs []claimRec) bool {
	for i, c := range cs {
		for _, d := range cs[:i] {
			if d.l == c.l {
				return false
			}
		}
	}
	return true
}

// endSplice records whether the next pass may splice this one's lists.
func (w *world) endSplice(in Input) {
	m := w.memo
	if m == nil {
		return
	}
	m.splice = spliceState{ok: m.on && w.lindex != nil && w.nonReplay == 0 &&
		len(in.TCPRoutes)+len(in.TLSRoutes)+len(in.UDPRoutes)+len(in.GRPCRoutes) == 0, egen: m.egen, lgen: m.lgen}
}

// notedAll records a pass that noted every route's status.
func (m *Memo) notedAll() {
	if m != nil {
		m.lastWhole = m.pass
	}
}
