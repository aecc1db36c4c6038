package gateway

import (
	gwv1 "sigs.k8s.io/gateway-api/apis/v1"
)

// The HTTPRoutes that changed, told to the pass (issue 30). A pass with
// one HTTPRoute changed among 5,000 looked every route's object up in
// the memo (Memo.httpRoute, a map lookup per route: about half of a
// spliced pass's instructions) to find the one that changed. The events
// the loop receives name it: with Input.HTTPRouteChanges the memo
// takes the last pass's HTTPRoutes as they were and makes routes of the
// told objects alone (each as a walk would: kept, stood in for or new).
//
// A wrong set must never give a wrong result, and checking a set against
// the snapshot object by object is the walk it saves (branch ck30's
// pointer sum: no CPU saved). So the set is trusted by construction and
// checked in O(told):
//
//   - it is a journal's span: the changes after From up to To, taken
//     with the snapshot under the journal's lock (the objects are the
//     snapshot's), so From must be the To of the pass before this one
//     (a snapshot not computed, a memo of another loop: not the same);
//   - All (the first pass, a relist, an overflow of the journal) and
//     any pass not told, or after a pass that was not, read every route;
//   - the count: the last pass's routes less the told ones it had, plus
//     the told objects, is the snapshot's count.
//
// TestToldRoutesAreTheWalk compares it with the walk over random edits
// and journals with gaps.

// ChangedRoutes are the HTTPRoutes of a journal's span (From, To].
type ChangedRoutes struct {
	From, To uint64
	// All: any route may have changed; every route is read.
	All bool
	// Keys are the HTTPRoutes added, updated (their status alone too) or
	// deleted in the span, and Objs[i] the object of Keys[i] in the
	// snapshot (nil: none, deleted). A key may repeat with one object.
	Keys []Key
	Objs []*gwv1.HTTPRoute
}

// toldState is the memo's part for ChangedRoutes.
type toldState struct {
	told *ChangedRoutes // this pass's (Input.HTTPRouteChanges)
	// last: the last pass's HTTPRoutes' routes (pass lastPass, its
	// snapshot at the journal's place lastTo; 0: not told, the next
	// pass walks).
	last     []*route
	lastPass int
	lastTo   uint64
	// Told and Walked count the passes that took the told routes and
	// those that looked every HTTPRoute up.
	Told, Walked int
}

// tell hands the pass the changed HTTPRoutes (nil: not told).
func (m *Memo) tell(c *ChangedRoutes) {
	if m != nil {
		m.told = c
	}
}

// toldRoutes appends this pass's HTTPRoutes to out, the last pass's
// with the told ones made again, and reports whether it did (false: out
// and the memo as they were; the caller walks every route).
func (m *Memo) toldRoutes(out []*route, in Input) ([]*route, bool) {
	c, lastTo := m.told, m.lastTo
	m.lastTo = 0
	if c != nil {
		m.lastTo = c.To // All too: the journal's place of this snapshot
	}
	if c == nil || c.All || lastTo == 0 || c.From != lastTo || m.lastPass != m.pass-1 || len(c.Objs) != len(c.Keys) {
		return out, false
	}
	// Each key once, in the journal's order (a pass's routes in a
	// deterministic order).
	named := make(map[Key]*gwv1.HTTPRoute, len(c.Keys))
	keys := make([]Key, 0, len(c.Keys))
	for i, k := range c.Keys {
		h, ok := named[k]
		if ok && h != c.Objs[i] {
			return out, false // one key, two objects: not one snapshot's
		}
		if !ok {
			named[k] = c.Objs[i]
			keys = append(keys, k)
		}
	}
	n := len(m.last)
	for _, k := range keys {
		if kr, ok := m.byKey[RouteKey{KindHTTPRoute, k}]; ok && kr.r.seen == m.pass-1 {
			n--
		}
		if named[k] != nil {
			n++
		}
	}
	if n != len(in.HTTPRoutes) {
		return out, false
	}
	start := len(out)
	for _, k := range keys {
		kr, had := m.byKey[RouteKey{KindHTTPRoute, k}]
		if !had {
			continue
		}
		// Not taken from the last pass's. A deleted one is left unseen,
		// as a walk leaves it: the splice and Memo.end find it by their
		// walk of the kept routes, as they do after a walk.
		kr.r.told = m.pass
	}
	for _, r := range m.last {
		if r.told == m.pass {
			continue
		}
		if r.seen != m.pass {
			m.nSeen++
			r.seen = m.pass
		}
		out = append(out, r)
	}
	for _, k := range keys {
		if h := named[k]; h != nil {
			out = append(out, m.httpRoute(h, httpRouteOf))
		}
	}
	m.keepHTTP(out[start:])
	m.Told++
	return out, true
}

// keepHTTP keeps the pass's HTTPRoutes' routes for the next pass.
func (m *Memo) keepHTTP(rs []*route) {
	if len(rs) < len(m.last) {
		clear(m.last[len(rs):]) // no route held past the list
	}
	m.last = append(m.last[:0], rs...)
	m.lastPass = m.pass
}
