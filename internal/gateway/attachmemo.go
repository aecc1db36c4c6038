package gateway

import (
	"slices"

	gwv1 "sigs.k8s.io/gateway-api/apis/v1"
)

// The attachment memo (issue 30): what attach did for an HTTPRoute (the
// listeners it claimed, with its server names there and whether it is
// served, in order) and the parents' status it gave, kept in the route's
// memo entry and replayed while nothing it read changed, so a pass
// attaches only the routes that changed. attach reads:
//
//   - the route object (its entry is its object's);
//   - the Services its backendRefs name (ResolvedRefs; the entry is
//     dropped when they change, memo.go);
//   - the GatewayClasses, Gateways, ListenerSets and Namespaces (the
//     memo's world: every entry is dropped when one changes);
//   - the state each listener was given this pass from what is not the
//     world (the load balancer's addresses, pools, UDP, CA bundles,
//     certificates): whether its Gateway's addresses serve, and whether
//     it is accepted, serves HTTP or only reports status. That is the
//     pass's listener signature; a pass whose signature differs from the
//     last one's replays nothing (the memo's lgen).
//
// A claim replays only on a listener that serves HTTP or only reports
// status, where what a route gets does not depend on the other routes
// (a TCP or TLS listener's does: attach runs for such a route). The
// result is attach's (TestMemoIsTheWholeCompute).

// attachRec is what attach did for a route in pass lgen's listeners.
type attachRec struct {
	lgen   int
	claims []claimRec
	sts    []gwv1.RouteParentStatus
}

// claimRec is one claim: the listener's place among the pass's
// listeners (world.lall), and what the route got there.
type claimRec struct {
	l      int
	snis   []string
	served bool
	// a: what the claim attached, handed out again as it is by a replay
	// (nothing changes an attachedRoute once claim made it), so a pass
	// allocates none for the routes it replays.
	a *attachedRoute
}

// listenerSig is the part of a listener's state the signature holds.
type listenerSig struct {
	gw                              Key
	addrOK                          bool
	accepted, statusOnly, servesHTP bool
	port                            uint16
}

// indexListeners numbers the pass's listeners (world.lall, lindex) and
// brings the memo's listener signature to them.
func (w *world) indexListeners(gws []*gw) {
	m := w.memo
	if m == nil || !m.on {
		return
	}
	w.lindex = map[*listener]int{}
	w.lall = w.lall[:0]
	sig := make([]listenerSig, 0, len(m.lsig))
	for _, x := range gws {
		for _, l := range x.listeners {
			w.lindex[l] = len(w.lall)
			w.lall = append(w.lall, l)
			sig = append(sig, listenerSig{gw: x.key, addrOK: x.addrOK, accepted: l.accepted, statusOnly: l.statusOnly(),
				servesHTP: l.servesHTTP(), port: l.port})
		}
	}
	if !slices.Equal(sig, m.lsig) {
		m.lgen++
		m.lsig = sig
	}
}

// startLists gives a pass that attaches every route the arrays of the
// last pass's lists of routes, emptied, by place.
func (w *world) startLists() {
	if w.lindex == nil {
		return
	}
	for i, l := range w.lall {
		if i < len(w.memo.lroutes) && l.routes == nil {
			l.routes = w.memo.lroutes[i][:0]
		}
	}
}

// keepListenerRoutes keeps the pass's listeners' lists of routes for the
// next pass: their arrays (thousands of routes each: a list grown route
// by route was 0.15 MB a pass at 5,000), and what they hold, which a
// spliced pass changes at the changed routes' places alone (splice.go).
// Nothing else reads a listener's list once Compute returns.
func (w *world) keepListenerRoutes() {
	if w.lindex == nil {
		return
	}
	m := w.memo
	m.lroutes = slices.Grow(m.lroutes[:0], len(w.lall))[:len(w.lall)]
	for i, l := range w.lall {
		clear(l.routes[len(l.routes):cap(l.routes)]) // no route kept alive past the end
		m.lroutes[i], l.routes = l.routes, nil
	}
}

// attached is attach(r, ...) as its parents' status (the last pass's
// slice when the same), replayed from r's memo entry when r read the
// same as when it was recorded.
func (w *world) attached(r *route, gws map[Key]*gw, controller string) []gwv1.RouteParentStatus {
	m := w.memo
	var e *routeEntry
	if w.lindex != nil && r.key.Kind == KindHTTPRoute && !r.kept {
		e = m.entry(r, w)
	}
	if e != nil && e.att != nil && e.att.lgen == m.lgen && (len(e.att.claims) == 0 || e.refs != nil) {
		for _, c := range e.att.claims {
			l := w.lall[c.l]
			a := c.a
			if a == nil || a.r != r || !sameRefs(a.refs, e.refs) {
				a = &attachedRoute{r: r, refs: e.refs, snis: c.snis, served: c.served}
			}
			l.routes = append(l.routes, a)
			l.attached++
		}
		m.AttachReused++
		return e.att.sts
	}
	if e == nil {
		w.nonReplay++
		return m.parentStatus(r.key, attach(r, gws, w, controller))
	}
	w.rec, w.recOK = w.rec[:0], true
	sts := m.parentStatus(r.key, attach(r, gws, w, controller))
	if w.recOK {
		e.att = &attachRec{lgen: m.lgen, claims: slices.Clone(w.rec), sts: sts}
	} else {
		w.nonReplay++
	}
	w.rec, w.recOK = w.rec[:0], false
	return sts
}

// recordClaim notes, while attached records, that l took a.
func (w *world) recordClaim(l *listener, a *attachedRoute) {
	if !w.recOK {
		return
	}
	i, ok := w.lindex[l]
	if !ok || !(l.servesHTTP() || l.statusOnly()) {
		w.recOK = false // a claim that cannot be replayed
		return
	}
	w.rec = append(w.rec, claimRec{l: i, snis: a.snis, served: a.served, a: a})
}

// sameRefs reports whether a and b are the same slice.
func sameRefs(a, b []resolvedRef) bool {
	return len(a) == len(b) && (len(a) == 0 || &a[0] == &b[0])
}
