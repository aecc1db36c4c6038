package gatewayctl

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/util/workqueue"

	"github.com/haproxy-k8s-sync/haproxy-k8s-sync/internal/gateway"
)

// A new result looks at the routes it may have changed, not at every
// route: each result of the gateway memo lists the routes whose wanted
// status may differ from the result of the pass before
// (gateway.Result.RoutesChanged; every other route's wanted slice is that
// result's very slice and its object the same), so while the results
// applied follow each other pass by pass, the routes the enqueue must
// compare are those lists' union, and the routes whose status was
// written meanwhile (Changed). A pass whose result was not applied (its
// driver failed), a result without a memo, more than maxChanged routes,
// a changed object that is not a route, a new leader or a Poke: the next
// enqueue walks every route, as before.

// step records, under mu, that res follows prev: the routes res may have
// changed join those to look at, or every route will be.
func (p *Publisher) step(prev, res *gateway.Result) {
	switch {
	case p.full:
	case prev == nil || res.Pass == 0 || res.Pass != prev.Pass+1 || len(p.keys)+len(res.RoutesChanged) > maxChanged:
		p.full, p.changed, p.keys = true, nil, nil
	default:
		p.keys = append(p.keys, res.RoutesChanged...)
	}
}

// enqueueKeys queues, under a result that follows the enqueued one, the
// classes, Gateways, policies and ListenerSets whose status differs
// (few), and of the routes those listed (keys) and those changed, each
// whose status differs. It reports false, having done nothing, when it
// cannot: no walk of every route yet, a changed object that is not a
// route, or the entries of objects replaced since the last walk grown
// past maxChanged (a walk sweeps them).
func (p *Publisher) enqueueKeys(q workqueue.TypedRateLimitingInterface[item], res *gateway.Result, changed []any, keys []gateway.RouteKey) bool {
	if p.synced == nil || p.enqueued == nil || len(p.synced) > p.walked+maxChanged || !allRoutes(changed) {
		return false
	}
	now := metav1.Now()
	p.enqueueOthers(q, p.objs.Snapshot(), res, now)
	p.enqueues++
	gen := p.enqueues
	p.enqueued = res
	for _, o := range changed {
		p.routeObj(q, res, o, now, gen)
	}
	for _, k := range keys {
		if o, ok := p.objs.Object(k.Kind, k.Namespace, k.Name); ok { // gone: nothing to write
			p.routeObj(q, res, o, now, gen)
		}
	}
	return true
}
