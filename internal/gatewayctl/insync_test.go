package gatewayctl

import (
	"slices"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/util/workqueue"
	gwv1 "sigs.k8s.io/gateway-api/apis/v1"

	"github.com/haproxy-k8s-sync/haproxy-k8s-sync/internal/gateway"
)

// fakeObjects is an informer cache of HTTPRoutes.
type fakeObjects struct {
	routes   []*gwv1.HTTPRoute
	gateways []*gwv1.Gateway
}

func (f *fakeObjects) Object(kind, ns, name string) (any, bool) {
	for _, r := range f.routes {
		if kind == gateway.KindHTTPRoute && r.Namespace == ns && r.Name == name {
			return r, true
		}
	}
	return nil, false
}
func (f *fakeObjects) Snapshot() gateway.Input {
	return gateway.Input{HTTPRoutes: f.routes, Gateways: f.gateways}
}

func parentsWith(reason string) []gwv1.RouteParentStatus {
	return []gwv1.RouteParentStatus{{ParentRef: gwv1.ParentReference{Name: "gw"}, ControllerName: gateway.ControllerName,
		Conditions: []metav1.Condition{{Type: "Accepted", Status: metav1.ConditionTrue, Reason: reason, ObservedGeneration: 1}}}}
}

func queued(p *Publisher) []string {
	q := workqueue.NewTypedRateLimitingQueue(workqueue.DefaultTypedControllerRateLimiter[item]())
	defer q.ShutDown()
	p.enqueue(q)
	var out []string
	for q.Len() > 0 {
		it, _ := q.Get()
		out = append(out, it.Name)
		q.Done(it)
	}
	slices.Sort(out)
	return out
}

// walked is queued after a Poke: an enqueue that walks every route.
func walked(p *Publisher) []string {
	p.Poke()
	return queued(p)
}

// threeRoutes is a publisher of routes apps/a, b and c, each with a
// result and no status yet.
func threeRoutes() (*fakeObjects, gateway.Result, *Publisher) {
	objs := &fakeObjects{}
	res := gateway.Result{}
	for _, n := range []string{"a", "b", "c"} {
		res.Routes = res.Routes.With(gateway.RouteKey{Kind: gateway.KindHTTPRoute, Key: gateway.Key{Namespace: "apps", Name: n}}, parentsWith("Accepted"))
		objs.routes = append(objs.routes, &gwv1.HTTPRoute{ObjectMeta: metav1.ObjectMeta{Namespace: "apps", Name: n}})
	}
	p := NewPublisher(nil, objs, PublisherOptions{})
	p.Applied(res)
	return objs, res, p
}

// The publisher skips a route it found in sync while its object and
// its parents' slice are the same, and looks again when either changes:
// a route whose object changed under an unchanged result is queued when
// its status differs.
func TestEnqueueSkipsRoutesInSync(t *testing.T) {
	objs, res, p := threeRoutes()
	if got := walked(p); !slices.Equal(got, []string{"a", "b", "c"}) {
		t.Fatalf("no status yet: queued %v, want a b c", got)
	}
	// The writes landed: the informer holds new objects.
	for i, r := range objs.routes {
		r = r.DeepCopy()
		r.Status.Parents = parentsWith("Accepted")
		objs.routes[i] = r
	}
	if got := walked(p); len(got) != 0 {
		t.Fatalf("every status written: queued %v, want none", got)
	}
	if len(p.synced) != 3 {
		t.Fatalf("%d routes marked in sync, want 3", len(p.synced))
	}
	// Route b's status changed behind us (a new object), the result
	// did not: it is looked at again and queued.
	b := objs.routes[1].DeepCopy()
	b.Status.Parents = parentsWith("Other")
	objs.routes[1] = b
	if got := walked(p); !slices.Equal(got, []string{"b"}) {
		t.Fatalf("b's status changed: queued %v, want b", got)
	}
	// Route c's result changed (a new slice): queued.
	b = b.DeepCopy()
	b.Status.Parents = parentsWith("Accepted")
	objs.routes[1] = b
	res.Routes = res.Routes.With(gateway.RouteKey{Kind: gateway.KindHTTPRoute, Key: gateway.Key{Namespace: "apps", Name: "c"}}, parentsWith("Changed"))
	p.Applied(res)
	if got := walked(p); !slices.Equal(got, []string{"c"}) {
		t.Fatalf("c's result changed: queued %v, want c", got)
	}
}

// A route whose status differs is queued by every enqueue until its
// write lands, but merged and compared once while its object and its
// parents' slice are the same (thousands of first statuses being
// written cost an enqueue a lookup each, not a merge); a route gone is
// forgotten.
func TestEnqueueComparesOnlyWhatChanged(t *testing.T) {
	objs, _, p := threeRoutes()
	for i := range 3 {
		if got := walked(p); !slices.Equal(got, []string{"a", "b", "c"}) {
			t.Fatalf("enqueue %d, no status written yet: queued %v, want a b c", i, got)
		}
		if p.compared != 3 {
			t.Fatalf("enqueue %d: %d routes compared in all, want 3 (each once)", i, p.compared)
		}
	}
	// b's write landed (a new object); c was deleted.
	b := objs.routes[1].DeepCopy()
	b.Status.Parents = parentsWith("Accepted")
	objs.routes = []*gwv1.HTTPRoute{objs.routes[0], b}
	if got := walked(p); !slices.Equal(got, []string{"a"}) {
		t.Fatalf("b written, c deleted: queued %v, want a", got)
	}
	if p.compared != 4 || len(p.synced) != 2 {
		t.Fatalf("%d compared in all (want 4: b again), %d remembered (want 2)", p.compared, len(p.synced))
	}
}

// Under the result the last enqueue compared with (an informer's poke:
// a status write landing), a route whose object is the same is neither
// looked up in the result nor compared: its entry holds as it is. A
// route whose object changed, or every route after a new result, is
// looked up again.
func TestEnqueueUnderTheSameResultLooksNothingUp(t *testing.T) {
	objs, res, p := threeRoutes()
	walked(p)
	if p.looked != 3 {
		t.Fatalf("first enqueue: %d routes looked up, want 3", p.looked)
	}
	for i, r := range objs.routes {
		r = r.DeepCopy()
		r.Status.Parents = parentsWith("Accepted")
		objs.routes[i] = r
	}
	walked(p) // three new objects
	for i := range 3 {
		if got := walked(p); len(got) != 0 {
			t.Fatalf("enqueue %d: queued %v, want none", i, got)
		}
		if p.looked != 6 {
			t.Fatalf("enqueue %d under the same result, no object changed: %d looked up in all, want 6 (none again)", i, p.looked)
		}
	}
	b := objs.routes[1].DeepCopy()
	b.Status.Parents = parentsWith("Other")
	objs.routes[1] = b
	if got := walked(p); !slices.Equal(got, []string{"b"}) || p.looked != 7 {
		t.Fatalf("b's object changed: queued %v and %d looked up in all, want b and 7", got, p.looked)
	}
	p.Applied(res) // a new result (the same statuses)
	if got := walked(p); !slices.Equal(got, []string{"b"}) || p.looked != 10 {
		t.Fatalf("a new result: queued %v and %d looked up in all, want b and 10", got, p.looked)
	}
}
