package gatewayctl

import (
	"k8s.io/apimachinery/pkg/api/equality"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/util/workqueue"
	gwv1 "sigs.k8s.io/gateway-api/apis/v1"

	"github.com/haproxy-k8s-sync/haproxy-k8s-sync/internal/gateway"
)

// maxChanged bounds the objects remembered between two enqueues; past
// it, the next enqueue looks at every object (as cheap per object).
const maxChanged = 4096

// Changed tells the publisher that obj (the informer cache's object) was
// updated in a way no pass reads: a status written, by us or another
// controller. Under the same result, the next enqueue compares the
// objects so told and walks no list; it never blocks.
func (p *Publisher) Changed(obj any) {
	if p == nil {
		return
	}
	p.mu.Lock()
	switch {
	case p.full:
	case len(p.changed) >= maxChanged:
		p.full, p.changed = true, nil
	default:
		p.changed = append(p.changed, obj)
	}
	p.mu.Unlock()
	p.wake.Poke()
}

// take returns the last result, the objects changed since the last
// enqueue and whether every object must be looked at, and starts afresh.
func (p *Publisher) take() (res *gateway.Result, changed []any, keys []gateway.RouteKey, full bool) {
	p.mu.Lock()
	defer p.mu.Unlock()
	res, changed, keys, full = p.last, p.changed, p.keys, p.full
	p.changed, p.keys, p.full = nil, nil, false
	return res, changed, keys, full
}

// enqueueChanged queues those of the changed objects whose status
// differs (the result the same as the last enqueue's: every other
// route's entry holds). A GatewayClass, Gateway, BackendTLSPolicy or
// ListenerSet among them (our own Gateway status write landing, after
// every new route) has the few objects of those kinds compared again,
// not every route: a route's wanted status is the result's, whatever
// those objects' status says. It reports false, having decided nothing,
// when one is of another kind: the caller looks at everything.
func (p *Publisher) enqueueChanged(q workqueue.TypedRateLimitingInterface[item], res *gateway.Result, changed []any) bool {
	others := false
	for _, o := range changed {
		if _, _, _, _, ok := routeOf(o); ok {
			continue
		}
		switch o.(type) {
		case *gwv1.GatewayClass, *gwv1.Gateway, *gwv1.BackendTLSPolicy, *gwv1.ListenerSet:
			others = true
		default:
			return false
		}
	}
	now := metav1.Now()
	if others {
		p.enqueueOthers(q, p.objs.Snapshot(), res, now)
	}
	gen := p.enqueues // entries marked as seen by the last walk: the next one keeps them
	for _, o := range changed {
		p.routeObj(q, res, o, now, gen)
	}
	return true
}

// allRoutes reports whether every object is a route.
func allRoutes(objs []any) bool {
	for _, o := range objs {
		if _, _, _, _, ok := routeOf(o); !ok {
			return false
		}
	}
	return true
}

// routeOf is obj's kind, namespace, name and parents' status, when it
// is a route.
func routeOf(obj any) (kind, ns, name string, have []gwv1.RouteParentStatus, ok bool) {
	switch r := obj.(type) {
	case *gwv1.TCPRoute:
		return gateway.KindTCPRoute, r.Namespace, r.Name, r.Status.Parents, true
	case *gwv1.TLSRoute:
		return gateway.KindTLSRoute, r.Namespace, r.Name, r.Status.Parents, true
	case *gwv1.UDPRoute:
		return gateway.KindUDPRoute, r.Namespace, r.Name, r.Status.Parents, true
	case *gwv1.HTTPRoute:
		return gateway.KindHTTPRoute, r.Namespace, r.Name, r.Status.Parents, true
	case *gwv1.GRPCRoute:
		return gateway.KindGRPCRoute, r.Namespace, r.Name, r.Status.Parents, true
	}
	return "", "", "", nil, false
}

// routeObj is route for obj, a route.
func (p *Publisher) routeObj(q workqueue.TypedRateLimitingInterface[item], res *gateway.Result, obj any, now metav1.Time, gen int) {
	if kind, ns, name, have, ok := routeOf(obj); ok {
		p.route(q, res, obj, kind, ns, name, have, now, gen, false)
	}
}

// route queues one route when its status differs from what res says,
// reading and keeping its entry in p.synced (insync.go): under the same
// result (sameRes) an entry the last walk saw holds as it is.
func (p *Publisher) route(q workqueue.TypedRateLimitingInterface[item], res *gateway.Result, obj any, kind, ns, name string,
	have []gwv1.RouteParentStatus, now metav1.Time, gen int, sameRes bool) {
	differs, known := false, false
	if sameRes {
		differs, known = p.synced.known(obj, gen)
	}
	if !known {
		want := res.Routes.Get(gateway.RouteKey{Kind: kind, Key: gateway.Key{Namespace: ns, Name: name}})
		p.looked++
		if differs, known = p.synced.verdict(obj, want, gen); !known {
			differs = !equality.Semantic.DeepEqual(p.parents(kind, ns, name, have, res, now), have)
			p.compared++
			p.synced.mark(obj, want, differs, gen)
		}
	}
	if differs {
		q.Add(item{kind, ns, name})
	}
}
