package gatewayctl

import (
	"strconv"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/util/workqueue"
	gwv1 "sigs.k8s.io/gateway-api/apis/v1"

	"github.com/haproxy-k8s-sync/haproxy-k8s-sync/internal/gateway"
)

// indexedObjects is an informer cache of HTTPRoutes looked up by name.
type indexedObjects struct {
	routes []*gwv1.HTTPRoute
	byName map[string]*gwv1.HTTPRoute
}

func (o *indexedObjects) Object(kind, ns, name string) (any, bool) {
	r, ok := o.byName[name]
	return r, ok && kind == gateway.KindHTTPRoute && ns == "apps"
}
func (o *indexedObjects) Snapshot() gateway.Input { return gateway.Input{HTTPRoutes: o.routes} }

// The publisher's enqueue of a new result that changed one route's
// status among n, every route's status otherwise as wanted: "walk" looks
// at every route (main's way: each new result a Poke), "listed" at the
// routes the result lists (delta.go).
// go test ./internal/gatewayctl -run '^$' -bench BenchmarkPublisherNewResult -benchmem
func BenchmarkPublisherNewResult(b *testing.B) {
	for _, n := range []int{1000, 5000} {
		for _, way := range []string{"walk", "listed"} {
			b.Run(strconv.Itoa(n)+"/"+way, func(b *testing.B) {
				objs := &indexedObjects{byName: map[string]*gwv1.HTTPRoute{}}
				res := gateway.Result{Pass: 1}
				sts := map[gateway.RouteKey][]gwv1.RouteParentStatus{}
				for i := range n {
					name := "r" + strconv.Itoa(i)
					r := &gwv1.HTTPRoute{ObjectMeta: metav1.ObjectMeta{Namespace: "apps", Name: name}}
					r.Status.Parents = parentsWith("Accepted")
					objs.routes = append(objs.routes, r)
					objs.byName[name] = r
					sts[routeKey(name)] = parentsWith("Accepted")
				}
				res.Routes = gateway.RouteStatusesOf(sts)
				p := NewPublisher(nil, objs, PublisherOptions{})
				q := workqueue.NewTypedRateLimitingQueue(workqueue.DefaultTypedControllerRateLimiter[item]())
				defer q.ShutDown()
				p.Applied(res)
				p.enqueue(q)
				p.enqueue(q) // every entry known
				for b.Loop() {
					next := gateway.Result{Pass: res.Pass + 1, Routes: res.Routes}
					k := routeKey("r" + strconv.Itoa(next.Pass%n))
					next.Routes = next.Routes.With(k, parentsWith("Accepted")) // a new slice, the same status
					next.RoutesChanged = []gateway.RouteKey{k}
					res = next
					p.Applied(res)
					if way == "walk" {
						p.Poke()
					}
					p.enqueue(q)
				}
				if q.Len() != 0 {
					b.Fatalf("%d routes queued, want none", q.Len())
				}
			})
		}
	}
}
