package gatewayctl

import (
	"math/rand/v2"
	"strconv"
	"testing"

	"k8s.io/apimachinery/pkg/api/equality"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/util/workqueue"
	gwv1 "sigs.k8s.io/gateway-api/apis/v1"

	"github.com/haproxy-k8s-sync/haproxy-k8s-sync/internal/gateway"
)

// deltaWorld drives a publisher through random results, status writes
// (ours, landing or not, and others' overwriting ours) and relists, as
// the gateway memo and the informers would.
type deltaWorld struct {
	rnd  *rand.Rand
	objs *fakeObjects
	p    *Publisher
	res  gateway.Result // the last result made (applied or not)
	q    workqueue.TypedRateLimitingInterface[item]
	// pending: routes queued and not yet written (the writer's queue
	// holds them until a write lands).
	pending map[string]bool
	gen     int
}

func routeKey(name string) gateway.RouteKey {
	return gateway.RouteKey{Kind: gateway.KindHTTPRoute, Key: gateway.Key{Namespace: "apps", Name: name}}
}

func newDeltaWorld(seed uint64, n int) *deltaWorld {
	w := &deltaWorld{rnd: rand.New(rand.NewPCG(seed, 30)), objs: &fakeObjects{}, pending: map[string]bool{},
		q: workqueue.NewTypedRateLimitingQueue(workqueue.DefaultTypedControllerRateLimiter[item]())}
	w.res = gateway.Result{Pass: 1}
	sts := map[gateway.RouteKey][]gwv1.RouteParentStatus{}
	for i := range n {
		name := "r" + strconv.Itoa(i)
		w.objs.routes = append(w.objs.routes, &gwv1.HTTPRoute{ObjectMeta: metav1.ObjectMeta{Namespace: "apps", Name: name}})
		if i%5 != 0 {
			sts[routeKey(name)] = parentsWith("Accepted")
		}
	}
	w.res.Routes = gateway.RouteStatusesOf(sts)
	w.p = NewPublisher(nil, w.objs, PublisherOptions{})
	w.p.Applied(w.res)
	return w
}

// next is the result after the last one, a few routes' wanted status
// new, gone or come; all is listed as changed besides.
func (w *deltaWorld) next(all bool) gateway.Result {
	res := gateway.Result{Pass: w.res.Pass + 1, Routes: w.res.Routes}
	for range 1 + w.rnd.IntN(3) {
		k := routeKey(w.objs.routes[w.rnd.IntN(len(w.objs.routes))].Name)
		switch w.rnd.IntN(3) {
		case 0:
			res.Routes = res.Routes.With(k, nil)
		default:
			w.gen++
			res.Routes = res.Routes.With(k, parentsWith("Reason"+strconv.Itoa(w.gen%4)))
		}
		res.RoutesChanged = append(res.RoutesChanged, k)
	}
	if all {
		for _, r := range w.objs.routes {
			res.RoutesChanged = append(res.RoutesChanged, routeKey(r.Name))
		}
	}
	w.res = res
	return res
}

// write lands a status on route i (told as the informer tells).
func (w *deltaWorld) write(i int, parents []gwv1.RouteParentStatus) {
	r := w.objs.routes[i].DeepCopy()
	r.Status.Parents = parents
	w.objs.routes[i] = r
	w.p.Changed(r)
}

// enqueue runs the publisher's enqueue and moves what it queued into
// pending.
func (w *deltaWorld) enqueue() {
	w.p.enqueue(w.q)
	for w.q.Len() > 0 {
		it, _ := w.q.Get()
		w.pending[it.Name] = true
		w.q.Done(it)
	}
}

// differing lists the routes whose status differs from the applied
// result's: what a walk of every route would queue.
func (w *deltaWorld) differing() []string {
	var out []string
	res := w.p.result()
	now := metav1.Now()
	for _, r := range w.objs.routes {
		if !equality.Semantic.DeepEqual(w.p.parents(gateway.KindHTTPRoute, r.Namespace, r.Name, r.Status.Parents, res, now), r.Status.Parents) {
			out = append(out, r.Name)
		}
	}
	return out
}

// Over random results, writes and relists, every route whose status
// differs from the applied result is queued (or still waiting in the
// writer's queue) after each enqueue, as a walk of every route finds;
// and a new result that follows the last one looks up the routes it
// lists, not every route. Some steps come two before one enqueue
// (status writes landing, then a new result).
func TestEnqueueKeysIsTheWalk(t *testing.T) {
	const n = 60
	for seed := range uint64(6) {
		w := newDeltaWorld(seed, n)
		w.enqueue()
		looked, targeted := 0, 0
		for step := range 300 {
			what := ""
			k := w.rnd.IntN(10)
			relist := k == 4 && w.rnd.IntN(5) == 0
			switch {
			case k < 3 || k == 4 && !relist:
				w.p.Applied(w.next(false))
				what = "a new result"
			case k == 3: // a pass whose driver failed: its result is never applied
				w.next(false)
				w.p.Applied(w.next(false))
				what = "a result after one not applied"
			case relist: // relisted: every object new, the next result lists every route
				for i, r := range w.objs.routes {
					w.objs.routes[i] = r.DeepCopy()
				}
				if w.rnd.IntN(2) == 0 { // changed during the outage
					i := w.rnd.IntN(n)
					w.objs.routes[i].Status.Parents = parentsWith("Theirs")
				}
				w.p.Applied(w.next(true))
				what = "relisted"
			case k < 8: // some pending writes land, as wanted or not
				res := w.p.result()
				for name := range w.pending {
					if w.rnd.IntN(2) == 0 {
						continue
					}
					i, _ := strconv.Atoi(name[1:])
					r := w.objs.routes[i]
					want := w.p.parents(gateway.KindHTTPRoute, "apps", name, r.Status.Parents, res, metav1.Now())
					if w.rnd.IntN(6) == 0 {
						want = parentsWith("Stale") // an older write landing last
					}
					w.write(i, want)
					delete(w.pending, name)
				}
				what = "writes landed"
			default: // another controller overwrote ours
				i := w.rnd.IntN(n)
				w.write(i, parentsWith("Other"))
				what = "route r" + strconv.Itoa(i) + " overwritten"
			}
			if w.rnd.IntN(3) == 0 {
				continue // the publisher busy: the next step's change comes before its enqueue
			}
			before := w.p.looked
			res, _, _, full := w.p.peek()
			newRes := res != w.p.enqueued
			w.enqueue()
			if newRes && !full {
				targeted++
				looked += w.p.looked - before
			}
			for _, name := range w.differing() {
				if !w.pending[name] {
					t.Fatalf("seed %d step %d (%s): route %s's status differs and it is not queued", seed, step, what, name)
				}
			}
		}
		if targeted < 50 || looked > targeted*n/4 {
			t.Errorf("seed %d: %d new results looked at the routes listed, %d routes looked up by them: want most results, few routes each", seed, targeted, looked)
		}
		t.Logf("seed %d: %d new results looked at the routes listed, %d routes looked up by them", seed, targeted, looked)
	}
}

// peek is take without starting afresh, for tests.
func (p *Publisher) peek() (res *gateway.Result, changed []any, keys []gateway.RouteKey, full bool) {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.last, p.changed, p.keys, p.full
}
