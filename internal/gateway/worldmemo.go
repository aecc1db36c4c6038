package gateway

import (
	"maps"

	"k8s.io/apimachinery/pkg/api/equality"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	gwv1 "sigs.k8s.io/gateway-api/apis/v1"
)

// Our own status writes and the memo's world (issue 30). Every route
// reads the GatewayClasses, Gateways and ListenerSets, and the memo
// forgets every route's entry when one of them is another object. But
// after a pass that attached a new route, the status publisher writes
// the Gateway's status (its listeners' attachedRoutes), and the next
// pass found a new Gateway object: at 5,000 routes every new route made
// the following pass compile every route again (two thirds of a pass's
// allocations in the benchmark's profile). A pass reads none of their
// status but a Gateway's status.addresses (the pools' stickiness), as
// source.Relevant says, so an object that differs from the last pass's
// in its status alone stands for the last one in the world: the entries
// are kept. TestMemoKeepsEntriesAcrossStatusWrites; the result is the
// whole computation's (TestMemoIsTheWholeCompute, edits "status of").

// The same holds for an HTTPRoute: after a pass, the publisher writes
// the status of the routes whose status changed, and the next pass got
// new objects for them. At the start (every route's first status) and
// in a burst, more than a quarter of the routes were new objects in one
// pass: every one compiled again and the HTTP table built whole
// (tablememo.go), 20-30 ms a pass at 1,000 routes, seen in
// BenchmarkHTTPRoutePropagation as the first change after the start
// taking the whole table. An HTTPRoute object that differs from the
// last one of its name in its status alone keeps the last one's route
// (its compiled rules, its place in the table); the pass still takes it
// as made now for its status (routesdelta.go), as a new object.
// TestTableMemoKeepsRoutesAcrossStatusWrites.

// keyedRoute is a route and the object that keys it in Memo.routes.
type keyedRoute struct {
	r   *route
	obj *gwv1.HTTPRoute
}

// routeStandIn is the route of the last object of h's name when h
// differs from it in its status alone, the last object's key in
// m.routes taken by h; nil: h is to be made a route.
func (m *Memo) routeStandIn(h *gwv1.HTTPRoute) *route {
	k, ok := m.byKey[RouteKey{KindHTTPRoute, Key{h.Namespace, h.Name}}]
	if !ok || !sameMeta(k.obj, h) ||
		!equality.Semantic.DeepEqual(k.obj.Spec, h.Spec) {
		return nil
	}
	delete(m.routes, k.obj)
	return k.r
}

// replaced forgets the route of the last object of h's name, which h,
// another object (not a stand-in), replaces: the pass then finds no
// route it did not see, and walks none of the thousands it kept
// (Memo.end). One already seen in this pass is left to end. It returns
// the route forgotten (nil: none).
func (m *Memo) replaced(h *gwv1.HTTPRoute) *route {
	k, ok := m.byKey[RouteKey{KindHTTPRoute, Key{h.Namespace, h.Name}}]
	if ok && k.obj != h && k.r.seen != m.pass {
		delete(m.routes, k.obj)
		return k.r
	}
	return nil
}

// forgetRoute forgets route r of object h (deleted).
func (m *Memo) forgetRoute(h *gwv1.HTTPRoute, r *route) {
	delete(m.routes, h)
	if m.byKey[r.key].r == r { // not a new object of its name
		delete(m.byKey, r.key)
	}
}

// worldKey names one object of the world.
type worldKey struct {
	kind string
	Key
}

// standIn is o, or the object of the last pass it stands for: the same
// object but for a status no pass reads. It notes the one it returns.
func (m *Memo) standIn(kind string, o metav1.Object, same func(a, b any) bool) any {
	k := worldKey{kind, Key{o.GetNamespace(), o.GetName()}}
	if m.objs == nil {
		m.objs = map[worldKey]any{}
	}
	if prev, ok := m.objs[k]; ok && prev != any(o) && sameMeta(prev.(metav1.Object), o) && same(prev, o) {
		m.nextObjs[k] = prev
		return prev
	}
	m.nextObjs[k] = o
	return o
}

// sameMeta: the same object, and the same in what a pass reads of its
// metadata.
func sameMeta(a, b metav1.Object) bool {
	return a.GetUID() == b.GetUID() && a.GetGeneration() == b.GetGeneration() &&
		a.GetCreationTimestamp().Time.Equal(b.GetCreationTimestamp().Time) &&
		a.GetDeletionTimestamp().Equal(b.GetDeletionTimestamp()) &&
		maps.Equal(a.GetLabels(), b.GetLabels()) && maps.Equal(a.GetAnnotations(), b.GetAnnotations())
}

func sameGateway(a, b any) bool {
	x, y := a.(*gwv1.Gateway), b.(*gwv1.Gateway)
	return equality.Semantic.DeepEqual(x.Spec, y.Spec) && equality.Semantic.DeepEqual(x.Status.Addresses, y.Status.Addresses)
}

func sameClass(a, b any) bool {
	return equality.Semantic.DeepEqual(a.(*gwv1.GatewayClass).Spec, b.(*gwv1.GatewayClass).Spec)
}

func sameListenerSet(a, b any) bool {
	return equality.Semantic.DeepEqual(a.(*gwv1.ListenerSet).Spec, b.(*gwv1.ListenerSet).Spec)
}
