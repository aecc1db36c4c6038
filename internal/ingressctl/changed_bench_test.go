package ingressctl

import (
	"maps"
	"net/netip"
	"strconv"
	"testing"

	netv1 "k8s.io/api/networking/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/util/workqueue"

	"github.com/haproxy-k8s-sync/haproxy-k8s-sync/internal/ingress"
)

// BenchmarkEnqueueNewIngress: at 5,000 served Ingresses whose status is
// written, one more served (Applied) and the writers' enqueue: the
// changed keys (changed.go) beside a walk of every cached Ingress (walk:
// main's enqueue before changed.go), CPU per new Ingress.
//
//	go test ./internal/ingressctl -run '^$' -bench BenchmarkEnqueueNewIngress
func BenchmarkEnqueueNewIngress(b *testing.B) {
	const n = 5000
	lb := []netip.Addr{netip.MustParseAddr("192.0.2.10")}
	for _, walk := range []bool{false, true} {
		name := "changed"
		if walk {
			name = "walk"
		}
		b.Run(name, func(b *testing.B) {
			c := fakeCache{}
			served := map[ingress.Key][]netip.Addr{}
			for i := range n {
				ing := &netv1.Ingress{ObjectMeta: metav1.ObjectMeta{Namespace: "a", Name: "i" + strconv.Itoa(i)}}
				ing.Status.LoadBalancer.Ingress = []netv1.IngressLoadBalancerIngress{{IP: "192.0.2.10"}}
				c[ing.Name] = ing
				served[ingress.Key{Namespace: "a", Name: ing.Name}] = lb
			}
			s := newServer(c, Options{Ingress: ingress.Options{Addresses: lb}})
			s.pending = ingress.Result{Served: served}
			s.Applied()
			q := workqueue.NewTypedRateLimitingQueue(workqueue.DefaultTypedControllerRateLimiter[ingress.Key]())
			defer q.ShutDown()
			s.enqueue(q)
			b.ResetTimer()
			for i := range b.N {
				name := "new" + strconv.Itoa(i)
				c[name] = &netv1.Ingress{ObjectMeta: metav1.ObjectMeta{Namespace: "a", Name: name}}
				b.StopTimer() // a pass's new Served (a Result is never modified)
				served = maps.Clone(served)
				served[ingress.Key{Namespace: "a", Name: name}] = lb
				b.StartTimer()
				s.pending = ingress.Result{Served: served}
				s.Applied()

				if walk {
					s.lookAtEverything()
				}
				s.enqueue(q)
				if q.Len() != 1 {
					b.Fatalf("%d queued, want the new Ingress", q.Len())
				}
				k, _ := q.Get() // its write landed
				w := c[k.Name].DeepCopy()
				w.Status.LoadBalancer.Ingress = []netv1.IngressLoadBalancerIngress{{IP: "192.0.2.10"}}
				c[k.Name] = w
				q.Done(k)
			}
		})
	}
}
