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
// may differ from the last pass's, and reports it: r's entry in the
// result is then to be set (routestatuses.go), else it is the last
// result's. An HTTPRoute the memo kept holds its last pass's slice: no
// lookup of the last pass's statuses by key (the pass replays most
// routes' attachment without one). Without a memo: true.
func (m *Memo) noteRoute(r *route, sts []gwv1.RouteParentStatus) bool {
	if m == nil {
		return true
	}
	var prev []gwv1.RouteParentStatus
	kept := r.key.Kind == KindHTTPRoute && r.made != m.pass
	// r.sts is its status in the last result when noted in the last
	// pass that noted every route, or since (a spliced pass notes only
	// the changed routes: splice.go).
	if kept && r.stsPass != 0 && r.stsPass >= m.lastWhole {
		prev = r.sts
	} else if !kept {
		prev = m.status.Get(r.key) // a new object, or a kind the memo does not keep
	}
	if len(prev) > 0 {
		m.nPrev++
	}
	r.sts, r.stsPass = sts, m.pass
	if kept && sameSlice(prev, sts) {
		return false
	}
	m.delta = append(m.delta, r.key)
	return true
}

// lastStatus is the last pass's statuses (none without a memo).
func (m *Memo) lastStatus() RouteStatuses {
	if m == nil {
		return RouteStatuses{}
	}
	return m.status
}

// gone removes from b the entries of the last pass's statuses whose
// route this pass did not note (rs: the routes it did; deleted objects),
// and lists them as changed. They are found by count: the statuses and
// rs are walked only when fewer entries were seen again than there are.
func (m *Memo) gone(rs []*route, b *routeStatusBuild) {
	if m == nil || m.nPrev >= m.status.Len() {
		return
	}
	seen := make(map[RouteKey]struct{}, len(rs))
	for _, r := range rs {
		seen[r.key] = struct{}{}
	}
	for k := range m.status.All() {
		if _, ok := seen[k]; !ok {
			m.delta = append(m.delta, k)
			b.put(k, nil)
		}
	}
}

// endDelta hands the list of routes whose status may have changed to res.
func (m *Memo) endDelta(res *Result) {
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
	if prev, ok := m.status.Lookup(k); ok && sameParents(prev, sts) {
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
