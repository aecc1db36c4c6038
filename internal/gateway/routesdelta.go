package gateway

import gwv1 "sigs.k8s.io/gateway-api/apis/v1"

// The routes whose status a pass may have changed (Result.RoutesChanged),
// so that the status publisher looks at those and not at every route of
// every new result. A pass with the memo hands an unchanged route the
// very slice of the pass before (parentStatus); what is listed is what
// is not known to be so: a route whose slice is new or whose entry came
// or went, an HTTPRoute whose object is new (relisted, or changed in a
// way that left its status as it was: the publisher's verdict is kept
// by object), and every route of a kind the memo does not keep (TCP,
// TLS, UDP and gRPC routes: few). Each costs the pass a map lookup it
// made anyway; the entries gone are found by count, with a walk of the
// last pass's only when fewer were seen again.

// noteRoute records, after r's attachment gave sts, whether r's status
// may differ from the last pass's. An HTTPRoute the memo kept holds its
// last pass's slice: no lookup of the last pass's map by key (the pass
// replays most routes' attachment without one).
func (m *Memo) noteRoute(r *route, sts []gwv1.RouteParentStatus) {
	if m == nil {
		return
	}
	var prev []gwv1.RouteParentStatus
	kept := r.key.Kind == KindHTTPRoute && r.made != m.pass
	if kept && r.stsPass == m.pass-1 {
		prev = r.sts
	} else if !kept {
		prev = m.status[r.key] // a new object, or a kind the memo does not keep
	}
	if len(prev) > 0 {
		m.nPrev++
	}
	r.sts, r.stsPass = sts, m.pass
	if kept && sameSlice(prev, sts) {
		return
	}
	m.delta = append(m.delta, r.key)
}

// endDelta adds the routes of the last pass's status that this pass did
// not see (deleted objects) and hands the list to res.
func (m *Memo) endDelta(res *Result) {
	if m.nPrev < len(m.status) {
		for k := range m.status {
			if _, ok := res.Routes[k]; !ok {
				m.delta = append(m.delta, k)
			}
		}
	}
	res.Pass, res.RoutesChanged = m.pass, m.delta
	m.delta = nil
}

// sameSlice reports whether a and b are the same slice (not only equal).
func sameSlice(a, b []gwv1.RouteParentStatus) bool {
	return len(a) == len(b) && (len(a) == 0 || &a[0] == &b[0])
}
