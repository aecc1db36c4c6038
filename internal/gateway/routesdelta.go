package gateway

import gwv1 "sigs.k8s.io/gateway-api/apis/v1"

// The routes' parents' status across passes: an unchanged one handed back
// as the last pass's very slice (parentStatus), and the routes whose
// status a pass may have changed (Result.RoutesChanged),
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

// parentStatus is sts, or the last pass's slice of route k when it is
// the same: unchanged statuses keep their identity.
func (m *Memo) parentStatus(k RouteKey, sts []gwv1.RouteParentStatus) []gwv1.RouteParentStatus {
	if m == nil {
		return sts
	}
	if prev, ok := m.status[k]; ok && sameParents(prev, sts) {
		return prev
	}
	return sts
}

func sameParents(a, b []gwv1.RouteParentStatus) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		x, y := a[i], b[i]
		if x.ControllerName != y.ControllerName || !sameRef(x.ParentRef, y.ParentRef) || len(x.Conditions) != len(y.Conditions) {
			return false
		}
		for j := range x.Conditions {
			c, d := x.Conditions[j], y.Conditions[j]
			if c.Type != d.Type || c.Status != d.Status || c.Reason != d.Reason || c.Message != d.Message ||
				c.ObservedGeneration != d.ObservedGeneration || !c.LastTransitionTime.Equal(&d.LastTransitionTime) {
				return false
			}
		}
	}
	return true
}

func sameRef(a, b gwv1.ParentReference) bool {
	return a.Name == b.Name && eqPtr(a.Group, b.Group) && eqPtr(a.Kind, b.Kind) && eqPtr(a.Namespace, b.Namespace) &&
		eqPtr(a.SectionName, b.SectionName) && eqPtr(a.Port, b.Port)
}

func eqPtr[T comparable](a, b *T) bool {
	if a == nil || b == nil {
		return a == b
	}
	return *a == *b
}
