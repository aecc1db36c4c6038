package gatewayctl

import (
	"context"
	"fmt"
	"log/slog"
	"sync"

	"k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/util/flowcontrol"
	"k8s.io/client-go/util/workqueue"
	gwv1 "sigs.k8s.io/gateway-api/apis/v1"
	gwv1a2 "sigs.k8s.io/gateway-api/apis/v1alpha2"
	gwclient "sigs.k8s.io/gateway-api/pkg/client/clientset/versioned"

	"github.com/haproxy-k8s-sync/haproxy-k8s-sync/internal/gateway"
	"github.com/haproxy-k8s-sync/haproxy-k8s-sync/internal/loop"
	"github.com/haproxy-k8s-sync/haproxy-k8s-sync/internal/source"
)

// Objects reads the informer caches (source.Gateway).
type Objects interface {
	Object(kind, namespace, name string) (any, bool)
	Snapshot() gateway.Input
}

// PublisherOptions configure a Publisher.
type PublisherOptions struct {
	ControllerName string
	QPS            float32 // status writes per second; <= 0: unlimited
	Burst          int
	Workers        int // concurrent writes (default 2)
	// RouteVersions: the version served of each route kind
	// (source.RouteVersions); a v1alpha2 route's status is written as
	// v1alpha2. Empty: v1.
	RouteVersions map[string]string
	Logger        *slog.Logger
}

// Publisher writes the status of GatewayClasses, Gateways and routes
// from what a pass applied, in goroutines of its own with its own rate
// limit (the pattern of the Services mode's controller.Publisher): a pass
// only hands over its result (Applied). Conditions of types we do not
// write, and route parents of other controllers, are left alone; a
// condition whose status did not change keeps its lastTransitionTime.
// Writes are updates of the status subresource naming the cached
// resourceVersion: an object changed meanwhile is retried, never
// overwritten blindly.
type Publisher struct {
	client  gwclient.Interface
	objs    Objects
	opts    PublisherOptions
	limiter flowcontrol.RateLimiter
	log     *slog.Logger

	mu   sync.Mutex
	last *gateway.Result
	wake loop.Wake
	// synced: what enqueue found for each route, and enqueues its count
	// (insync.go; enqueue's alone).
	synced   inSync
	enqueues int
	enqueued *gateway.Result // the result the last enqueue compared with
	// changed: the objects updated (a status written) since the last
	// enqueue, and full whether it must look at every object instead
	// (changed.go; under mu).
	changed []any
	full    bool
	// keys: the routes whose wanted status may differ between the
	// result the last enqueue took and the last one applied, each
	// result following the one before pass by pass (delta.go; under
	// mu); walked: the routes' entries after the last walk of every
	// route (enqueue's alone).
	keys     []gateway.RouteKey
	walked   int
	compared int // routes merged and compared, for tests
	looked   int // routes' wanted status looked up, for tests
}

type item struct{ Kind, Namespace, Name string }

// NewPublisher returns a Publisher.
func NewPublisher(client gwclient.Interface, objs Objects, opts PublisherOptions) *Publisher {
	if opts.Workers <= 0 {
		opts.Workers = 2
	}
	if opts.Logger == nil {
		opts.Logger = slog.Default()
	}
	if opts.ControllerName == "" {
		opts.ControllerName = gateway.ControllerName
	}
	p := &Publisher{client: client, objs: objs, opts: opts, log: opts.Logger, wake: loop.NewWake()}
	if opts.QPS > 0 {
		p.limiter = flowcontrol.NewTokenBucketRateLimiter(opts.QPS, max(opts.Burst, 1))
	}
	return p
}

// Applied records the statuses of a model the drivers now run. It never
// blocks.
func (p *Publisher) Applied(res gateway.Result) {
	if p == nil {
		return
	}
	p.mu.Lock()
	p.step(p.last, &res) // delta.go: the routes to look at, or everything
	p.last = &res
	p.mu.Unlock()
	p.wake.Poke()
}

// Poke makes the publisher compare every object again.
func (p *Publisher) Poke() {
	if p == nil {
		return
	}
	p.mu.Lock()
	p.full, p.changed, p.keys = true, nil, nil
	p.mu.Unlock()
	p.wake.Poke()
}

// Run writes statuses until ctx ends. Under leader election it runs only
// while this replica leads; each start re-examines every object.
func (p *Publisher) Run(ctx context.Context) {
	if p == nil {
		return
	}
	p.synced, p.enqueued = nil, nil // a new leader looks at every object
	loop.Writers[item]{
		Name: "haproxy-k8s-sync-gateway-status", Workers: p.opts.Workers, Wake: p.wake,
		Enqueue: p.enqueue, Write: p.write,
		OnError: func(it item, err error, retries int) {
			p.log.Warn("could not write Gateway API status; will retry", "kind", it.Kind, "object", it.Namespace+"/"+it.Name, "err", err, "retries", retries)
		},
	}.Run(ctx)
}

func (p *Publisher) result() *gateway.Result {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.last
}

// enqueue queues every object whose status differs from what it should
// be: under the result the last enqueue compared with, only the objects
// updated since (changed.go), when they are all routes.
func (p *Publisher) enqueue(q workqueue.TypedRateLimitingInterface[item]) {
	res, changed, keys, full := p.take()
	if res == nil {
		return // nothing applied yet: nothing is known to be served
	}
	if !full && res == p.enqueued && p.synced != nil && p.enqueueChanged(q, res, changed) {
		return
	}
	if !full && res != p.enqueued && p.enqueueKeys(q, res, changed, keys) { // delta.go
		return
	}
	in := p.objs.Snapshot()
	now := metav1.Now()
	p.enqueueOthers(q, in, res, now)
	if p.synced == nil {
		p.synced = inSync{} // insync.go: what each route was found to be
	}
	p.enqueues++
	gen := p.enqueues
	sameRes := res == p.enqueued // insync.go: the entries hold as they are
	p.enqueued = res
	routes := func(obj any, kind, ns, name string, have []gwv1.RouteParentStatus) {
		p.route(q, res, obj, kind, ns, name, have, now, gen, sameRes)
	}
	for _, r := range in.TCPRoutes {
		routes(r, gateway.KindTCPRoute, r.Namespace, r.Name, r.Status.Parents)
	}
	for _, r := range in.TLSRoutes {
		routes(r, gateway.KindTLSRoute, r.Namespace, r.Name, r.Status.Parents)
	}
	for _, r := range in.UDPRoutes {
		routes(r, gateway.KindUDPRoute, r.Namespace, r.Name, r.Status.Parents)
	}
	for _, r := range in.HTTPRoutes {
		routes(r, gateway.KindHTTPRoute, r.Namespace, r.Name, r.Status.Parents)
	}
	for _, r := range in.GRPCRoutes {
		routes(r, gateway.KindGRPCRoute, r.Namespace, r.Name, r.Status.Parents)
	}
	p.synced.sweep(gen)
	p.walked = len(p.synced)
}

// enqueueOthers queues the GatewayClasses, Gateways, policies and
// ListenerSets whose status differs: few objects, each walk.
func (p *Publisher) enqueueOthers(q workqueue.TypedRateLimitingInterface[item], in gateway.Input, res *gateway.Result, now metav1.Time) {
	for _, c := range in.Classes {
		if _, ok := res.Classes[c.Name]; ok && !equality.Semantic.DeepEqual(classStatus(c, res, now), c.Status) {
			q.Add(item{"GatewayClass", "", c.Name})
		}
	}
	for _, g := range in.Gateways {
		if _, ok := res.Gateways[gateway.Key{Namespace: g.Namespace, Name: g.Name}]; ok && !equality.Semantic.DeepEqual(gatewayStatus(g, res, now), g.Status) {
			q.Add(item{"Gateway", g.Namespace, g.Name})
		}
	}
	p.enqueuePolicies(func(it item) { q.Add(it) }, in, res, now)   // policystatus.go
	enqueueListenerSets(func(it item) { q.Add(it) }, in, res, now) // lsstatus.go
}

// alpha reports whether routes of kind are served as v1alpha2.
func (p *Publisher) alpha(kind string) bool {
	return p.opts.RouteVersions[kind] == source.RouteV1Alpha2
}

// write updates one object's status from the cache, if it still differs.
func (p *Publisher) write(ctx context.Context, it item) error {
	res := p.result()
	o, ok := p.objs.Object(it.Kind, it.Namespace, it.Name)
	if !ok || res == nil {
		return nil
	}
	now := metav1.Now()
	wait := func() error {
		if p.limiter != nil {
			return p.limiter.Wait(ctx)
		}
		return nil
	}
	var err error
	gw := p.client.GatewayV1()
	switch obj := o.(type) {
	case *gwv1.GatewayClass:
		st := classStatus(obj, res, now)
		if equality.Semantic.DeepEqual(st, obj.Status) {
			return nil
		}
		c := obj.DeepCopy()
		c.Status = st
		if err = wait(); err == nil {
			_, err = gw.GatewayClasses().UpdateStatus(ctx, c, metav1.UpdateOptions{})
		}
	case *gwv1.Gateway:
		st := gatewayStatus(obj, res, now)
		if equality.Semantic.DeepEqual(st, obj.Status) {
			return nil
		}
		c := obj.DeepCopy()
		c.Status = st
		if err = wait(); err == nil {
			_, err = gw.Gateways(obj.Namespace).UpdateStatus(ctx, c, metav1.UpdateOptions{})
		}
	case *gwv1.TCPRoute:
		err = writeRoute(p, it.Kind, obj.Status.Parents, p.parents(it.Kind, obj.Namespace, obj.Name, obj.Status.Parents, res, now), wait,
			func(st []gwv1.RouteParentStatus) *gwv1.TCPRoute { c := obj.DeepCopy(); c.Status.Parents = st; return c },
			func(c *gwv1.TCPRoute) error {
				_, err := gw.TCPRoutes(obj.Namespace).UpdateStatus(ctx, c, metav1.UpdateOptions{})
				return err
			},
			func(a *gwv1a2.TCPRoute) error {
				_, err := p.client.GatewayV1alpha2().TCPRoutes(obj.Namespace).UpdateStatus(ctx, a, metav1.UpdateOptions{})
				return err
			})
	case *gwv1.TLSRoute:
		err = writeRoute(p, it.Kind, obj.Status.Parents, p.parents(it.Kind, obj.Namespace, obj.Name, obj.Status.Parents, res, now), wait,
			func(st []gwv1.RouteParentStatus) *gwv1.TLSRoute { c := obj.DeepCopy(); c.Status.Parents = st; return c },
			func(c *gwv1.TLSRoute) error {
				_, err := gw.TLSRoutes(obj.Namespace).UpdateStatus(ctx, c, metav1.UpdateOptions{})
				return err
			},
			func(a *gwv1a2.TLSRoute) error {
				_, err := p.client.GatewayV1alpha2().TLSRoutes(obj.Namespace).UpdateStatus(ctx, a, metav1.UpdateOptions{})
				return err
			})
	case *gwv1.UDPRoute:
		err = writeRoute(p, it.Kind, obj.Status.Parents, p.parents(it.Kind, obj.Namespace, obj.Name, obj.Status.Parents, res, now), wait,
			func(st []gwv1.RouteParentStatus) *gwv1.UDPRoute { c := obj.DeepCopy(); c.Status.Parents = st; return c },
			func(c *gwv1.UDPRoute) error {
				_, err := gw.UDPRoutes(obj.Namespace).UpdateStatus(ctx, c, metav1.UpdateOptions{})
				return err
			},
			func(a *gwv1a2.UDPRoute) error {
				_, err := p.client.GatewayV1alpha2().UDPRoutes(obj.Namespace).UpdateStatus(ctx, a, metav1.UpdateOptions{})
				return err
			})
	case *gwv1.HTTPRoute:
		err = writeRoute(p, it.Kind, obj.Status.Parents, p.parents(it.Kind, obj.Namespace, obj.Name, obj.Status.Parents, res, now), wait,
			func(st []gwv1.RouteParentStatus) *gwv1.HTTPRoute {
				c := obj.DeepCopy()
				c.Status.Parents = st
				return c
			},
			func(c *gwv1.HTTPRoute) error {
				_, err := gw.HTTPRoutes(obj.Namespace).UpdateStatus(ctx, c, metav1.UpdateOptions{})
				return err
			},
			func(*gwv1.HTTPRoute) error { return nil }) // HTTPRoutes are read as v1 only
	case *gwv1.GRPCRoute:
		err = writeRoute(p, it.Kind, obj.Status.Parents, p.parents(it.Kind, obj.Namespace, obj.Name, obj.Status.Parents, res, now), wait,
			func(st []gwv1.RouteParentStatus) *gwv1.GRPCRoute {
				c := obj.DeepCopy()
				c.Status.Parents = st
				return c
			},
			func(c *gwv1.GRPCRoute) error {
				_, err := gw.GRPCRoutes(obj.Namespace).UpdateStatus(ctx, c, metav1.UpdateOptions{})
				return err
			},
			func(*gwv1.GRPCRoute) error { return nil }) // GRPCRoutes are read as v1 only
	case *gwv1.BackendTLSPolicy:
		err = p.writePolicy(ctx, obj, res, now, wait) // policystatus.go
	case *gwv1.ListenerSet:
		err = p.writeListenerSet(ctx, obj, res, now, wait) // lsstatus.go
	}
	if apierrors.IsNotFound(err) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("status of %s %s/%s: %w", it.Kind, it.Namespace, it.Name, err)
	}
	return nil
}

// writeRoute writes a route's parents when they differ from cur, after
// the rate limit, in the version the cluster serves the route kind in
// (v1, or v1alpha2 converted from it). R is the v1 type, A the v1alpha2 one.
func writeRoute[R, A any](p *Publisher, kind string, cur, st []gwv1.RouteParentStatus, wait func() error,
	with func([]gwv1.RouteParentStatus) *R, v1 func(*R) error, v1a2 func(*A) error) error {
	if equality.Semantic.DeepEqual(st, cur) {
		return nil
	}
	c := with(st)
	if err := wait(); err != nil {
		return err
	}
	if p.alpha(kind) {
		a, err := source.Convert[A](c)
		if err != nil {
			return err
		}
		return v1a2(a)
	}
	return v1(c)
}
