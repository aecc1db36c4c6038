package gateway

import (
	corev1 "k8s.io/api/core/v1"
	gwv1 "sigs.k8s.io/gateway-api/apis/v1"

	"github.com/haproxy-k8s-sync/haproxy-k8s-sync/internal/desired"
)

// Memo is Compute's memo per route (issue 30): a pass recomputes only
// the routes whose inputs changed and reuses the rest of the last pass.
// The informers hand out objects that are never changed in place (an
// update is a new object), so an input is the same when its pointer is.
// What is kept:
//
//   - each HTTPRoute as a route, checked (checkHTTPRoute), by its object;
//   - per route, its backendRefs resolved and its compiled rules on each
//     HTTP listener it is served on (actions, matches, the backends they
//     create), valid while the route object and the Services and
//     EndpointSlices its backendRefs name are the ones they were read
//     from;
//   - per route, the parents' status, handed back as the very slice of
//     the last pass when it did not change, so the status writer can
//     skip it by identity (gatewayctl).
//
// Every route reads the GatewayClasses, Gateways, ReferenceGrants,
// Namespaces and Secrets: a change to any of them forgets every route's
// entry. With BackendTLSPolicies the memo is not used (a route's
// backends record the policies' ancestors as they are computed). The
// result is the same with and without it (TestMemoIsTheWholeCompute).
// The caller (the gateway loop) owns it and passes it in Options.Memo;
// nil: every pass computes every route. One pass at a time.
type Memo struct {
	pass   int
	on     bool             // this pass may use the entries
	world  map[any]struct{} // the objects every route reads, last pass
	routes map[*gwv1.HTTPRoute]*route
	byKey  map[RouteKey]keyedRoute // the routes by name, for stand-ins (worldmemo.go)
	// egen: the world's generation; a route's entry (route.e) holds
	// while it is of this one (every route's forgotten at once).
	egen    int
	status  RouteStatuses           // the last result's (routestatuses.go)
	tables  map[tableKey]*tableMemo // each HTTP frontend's table (tablememo.go)
	stamps  stamper                 // for the tables' updates (tablestamps.go)
	svcs    map[Key]*corev1.Service // the last pass's Services and EndpointSlices (world's)
	slices  map[Key][]*desired.Slice
	changed map[Key]bool  // the Services whose object or EndpointSlices differ from the last pass's
	lsig    []listenerSig // the last pass's listener signature (attachmemo.go)
	lgen    int           // counts the signatures that differed
	order   orderMemo     // the routes' order (ordermemo.go)
	// objs: the world's Classes, Gateways and ListenerSets of the last
	// pass, each the object it stands for (worldmemo.go); nextObjs this
	// pass's, being made.
	objs, nextObjs map[worldKey]any
	// nSeen counts the routes seen in the pass: end walks the routes
	// only when some were not.
	nSeen int
	// sweeps counts the passes that walked every route kept (tests).
	sweeps int
	// nPrev counts the routes of the last pass's status seen again in
	// this one, delta the routes whose status may have changed
	// (routesdelta.go).
	nPrev int
	delta []RouteKey
	// rs: the array of the routes' list a pass makes (routesOf), reused;
	// empty between passes.
	rs []*route
	// lroutes: the arrays of the listeners' lists of routes, by place
	// (attachmemo.go keepListenerRoutes); empty between passes.
	lroutes [][]*attachedRoute
	// the last pass's HTTPRoutes, the changed ones told (routechanges.go)
	toldState
	// Reused and Compiled count the routes' compiled rules taken from
	// the memo and compiled again, for tests and benchmarks.
	Reused, Compiled int
	// TablesIncremental and TablesWhole count the HTTP tables built
	// from the last one and built whole (tablememo.go).
	TablesIncremental, TablesWhole int
	// TablesInPlace: the incremental ones updated place by place (tableinplace.go).
	TablesInPlace int
	// AttachReused counts the routes whose attachment was replayed
	// (attachmemo.go).
	AttachReused int
	// movedAt: the last pass whose Services or EndpointSlices differed
	// from the pass before's; prevMovedAt: the one before this pass's
	// (an entry checked since holds but for this pass's changes: entry).
	movedAt, prevMovedAt int
	// lastWhole: the last pass that noted every route's status
	// (routesdelta.go); a spliced pass notes the changed ones alone.
	lastWhole int
	// madeNow: the routes made for a new object this pass (stand-ins
	// too); goneNow: the routes of the last objects those replaced
	// (splice.go).
	madeNow, goneNow []*route
	splice           spliceState // whether the next pass may splice (splice.go)
	// Spliced counts the passes spliced, SpliceKept the routes they
	// left untouched (neither compiled nor attached again), TablesSpliced
	// the tables changed at their changed places alone (splice.go,
	// tablesplice.go).
	Spliced, SpliceKept, TablesSpliced int
	// noSplice: every pass attaches every route (tests of that way).
	noSplice bool
}

// routeEntry is what the memo keeps of one route.
type routeEntry struct {
	gen   int // Memo.egen when made
	pass  int
	refs  []resolvedRef // resolve(r); nil until asked
	frags []fragAt      // one or a few: a slice, not a map (thousands are kept)
	att   *attachRec    // what attach did (attachmemo.go); nil: not recorded
}

// begin starts a pass over in.
func (m *Memo) begin(in Input) {
	if m == nil {
		return
	}
	m.pass++
	m.nSeen = 0
	m.nPrev, m.delta = 0, nil // routesdelta.go
	clear(m.madeNow)
	clear(m.goneNow)
	m.madeNow, m.goneNow = m.madeNow[:0], m.goneNow[:0]
	m.on = len(in.BackendTLSPolicies) == 0
	world := make(map[any]struct{}, len(in.Classes)+len(in.Gateways)+len(in.Grants)+len(in.Namespaces)+len(in.Secrets))
	m.nextObjs = make(map[worldKey]any, len(in.Classes)+len(in.Gateways)+len(in.ListenerSets))
	for _, o := range in.Classes {
		world[m.standIn("GatewayClass", o, sameClass)] = struct{}{} // worldmemo.go: our status writes are no change
	}
	for _, o := range in.Gateways {
		world[m.standIn("Gateway", o, sameGateway)] = struct{}{}
	}
	for _, o := range in.Grants {
		world[o] = struct{}{}
	}
	for _, o := range in.Namespaces {
		world[o] = struct{}{}
	}
	for _, o := range in.Secrets {
		world[o] = struct{}{}
	}
	for _, o := range in.ListenerSets {
		world[m.standIn("ListenerSet", o, sameListenerSet)] = struct{}{}
	}
	m.objs = m.nextObjs
	if !m.on || !sameSet(m.world, world) {
		m.egen++ // every route's entry forgotten
	}
	m.world = world
	if m.routes == nil {
		m.routes = map[*gwv1.HTTPRoute]*route{}
		m.byKey = map[RouteKey]keyedRoute{}
		m.tables = map[tableKey]*tableMemo{}
	}
}

// end forgets what the pass did not see.
func (m *Memo) end(res *Result) {
	if m == nil {
		return
	}
	if m.nSeen < len(m.routes) { // else every one was seen: nothing to walk
		m.sweeps++
		for h, r := range m.routes {
			if r.seen != m.pass {
				m.forgetRoute(h, r) // worldmemo.go
			}
		}
	}
	for k, t := range m.tables {
		if t.pass != m.pass {
			delete(m.tables, k)
		}
	}
	m.endDelta(res) // routesdelta.go: before m.status is this pass's
	m.status = res.Routes
}

func sameSet(a, b map[any]struct{}) bool {
	if len(a) != len(b) {
		return false
	}
	for k := range b {
		if _, ok := a[k]; !ok {
			return false
		}
	}
	return true
}

// httpRoute is h as a route, checked once per object.
func (m *Memo) httpRoute(h *gwv1.HTTPRoute, mk func(*gwv1.HTTPRoute) *route) *route {
	if m == nil {
		return mk(h)
	}
	r, ok := m.routes[h]
	if !ok {
		r = m.routeStandIn(h) // worldmemo.go: our status write echoed
		if r == nil {
			if old := m.replaced(h); old != nil {
				m.goneNow = append(m.goneNow, old)
			}
			r = mk(h)
		}
		m.madeNow = append(m.madeNow, r)
		r.made = m.pass
		m.routes[h] = r
		m.byKey[r.key] = keyedRoute{r, h}
	}
	if r.seen != m.pass {
		m.nSeen++
		r.seen = m.pass
	}
	return r
}

// moved notes the Services whose object or EndpointSlices are not the
// last pass's (added and deleted ones too): an entry of the last pass
// is fresh when its route names none of them (its deps were the last
// pass's world, checked or made then). Every pass, with or without the
// memo in use.
func (m *Memo) moved(w *world) {
	if m == nil {
		return
	}
	m.changed = map[Key]bool{}
	for k, s := range w.services {
		if m.svcs[k] != s {
			m.changed[k] = true
		}
	}
	for k := range m.svcs {
		if _, ok := w.services[k]; !ok {
			m.changed[k] = true
		}
	}
	for k, sl := range w.slices {
		if !sameSlices(m.slices[k], sl) {
			m.changed[k] = true
		}
	}
	for k := range m.slices {
		if _, ok := w.slices[k]; !ok {
			m.changed[k] = true
		}
	}
	m.svcs, m.slices = w.services, w.slices
	m.prevMovedAt = m.movedAt
	if len(m.changed) > 0 {
		m.movedAt = m.pass
	}
}

// entry is r's entry for this pass: the last pass's when r read the
// same Services and EndpointSlices in the same world, else an empty one.
// An entry checked in an earlier pass than the last (a spliced pass
// checks only the changed routes', splice.go) holds as the last pass's
// does when no pass since changed a Service (Memo.prevMovedAt).
// It is kept on the route (no map of every route's entry to look up and
// to sweep: an entry goes with its route; one of a route no pass asks
// for any longer, not served, stays until the route goes or is asked
// again). nil without a memo.
func (m *Memo) entry(r *route, w *world) *routeEntry {
	if m == nil || !m.on {
		return nil
	}
	e := r.e
	switch {
	case e != nil && e.gen == m.egen && e.pass == m.pass:
		return e // asked before in this pass
	case e == nil || e.gen != m.egen || e.pass < m.prevMovedAt || !e.freshSince(r, m.changed):
		e = &routeEntry{gen: m.egen}
		r.e = e
	}
	e.pass = m.pass
	return e
}

// freshSince reports whether e, an entry of the last pass, still holds:
// r names no Service changed since (its deps were the last pass's).
func (e *routeEntry) freshSince(r *route, changed map[Key]bool) bool {
	if len(changed) == 0 {
		return true
	}
	for _, ref := range r.refs {
		if changed[svcOf(r, ref)] {
			return false
		}
	}
	return true
}

// svcOf is the Service a backendRef of r names.
func svcOf(r *route, ref gwv1.BackendRef) Key {
	k := Key{r.key.Namespace, string(ref.Name)}
	if ref.Namespace != nil {
		k.Namespace = string(*ref.Namespace)
	}
	return k
}

// sameSlices reports whether a and b hold the same EndpointSlices.
func sameSlices(a, b []*desired.Slice) bool {
	if len(a) != len(b) {
		return false
	}
	for _, s := range b { // in any order: the informer lists them so
		found := false
		for _, t := range a {
			if s == t {
				found = true
				break
			}
		}
		if !found {
			return false
		}
	}
	return true
}

// resolved is w.resolve(r), from the memo when r's inputs are the same.
func (w *world) resolved(r *route) []resolvedRef {
	e := w.memo.entry(r, w)
	if e == nil {
		return w.resolve(r)
	}
	if e.refs == nil {
		e.refs = w.resolve(r)
	}
	return e.refs
}
