package gatewayctl

import (
	"slices"
	"testing"

	corev1 "k8s.io/api/core/v1"
	netv1 "k8s.io/api/networking/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	gwv1 "sigs.k8s.io/gateway-api/apis/v1"

	"github.com/haproxy-k8s-sync/haproxy-k8s-sync/internal/gateway"
	"github.com/haproxy-k8s-sync/haproxy-k8s-sync/internal/model"
)

// written replaces route i by a copy with parents (a status write that
// landed, or another controller's) and tells the publisher, as the
// informer does.
func written(p *Publisher, objs *fakeObjects, i int, parents []gwv1.RouteParentStatus) {
	r := objs.routes[i].DeepCopy()
	r.Status.Parents = parents
	objs.routes[i] = r
	p.Changed(r)
}

// Under the same result, an enqueue after status writes landed compares
// the routes it was told of and no other, and still queues every one of
// them whose status differs: ours overwritten by someone else, or a
// write that landed wrong. Poke, a new result or a changed object that
// is not a route make it look at every route again.
func TestEnqueueComparesTheChangedRoutes(t *testing.T) {
	tests := []struct {
		name    string
		reasons map[int]string // route index -> the reason its status is written with
		want    []string
	}{
		{name: "all landed as wanted", reasons: map[int]string{0: "Accepted", 1: "Accepted", 2: "Accepted"}},
		{name: "b overwritten", reasons: map[int]string{0: "Accepted", 1: "Other", 2: "Accepted"}, want: []string{"b"}},
		{name: "a and c overwritten, b not yet written", reasons: map[int]string{0: "Other", 2: "Other"}, want: []string{"a", "c"}},
		{name: "nothing landed"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			objs, _, p := threeRoutes()
			if got := queued(p); !slices.Equal(got, []string{"a", "b", "c"}) {
				t.Fatalf("no status yet: queued %v, want a b c", got)
			}
			looked := p.looked
			for i, reason := range tt.reasons {
				written(p, objs, i, parentsWith(reason))
			}
			if got := queued(p); !slices.Equal(got, tt.want) {
				t.Fatalf("queued %v, want %v", got, tt.want)
			}
			if n := p.looked - looked; n != len(tt.reasons) {
				t.Fatalf("%d routes looked up, want %d (the changed ones only)", n, len(tt.reasons))
			}
		})
	}
}

// allWritten has threeRoutes' statuses written as wanted and checks that
// nothing is queued then.
func allWritten(t *testing.T, objs *fakeObjects, p *Publisher) {
	t.Helper()
	queued(p)
	for i := range 3 {
		written(p, objs, i, parentsWith("Accepted"))
	}
	if got := queued(p); len(got) != 0 {
		t.Fatalf("every status written: queued %v, want none", got)
	}
}

// A route the enqueue was not told of keeps the verdict of the walk
// before (b, not yet written, stays queued by the worker's queue, not
// re-added); Poke, a new result, or a changed object that is not a route
// walk every route again and queue each one that differs.
func TestEnqueueWalksEverythingWhenTold(t *testing.T) {
	objs, res, p := threeRoutes()
	allWritten(t, objs, p)
	// b changed behind us and nobody told the publisher: a Poke finds it.
	b := objs.routes[1].DeepCopy()
	b.Status.Parents = parentsWith("Other")
	objs.routes[1] = b
	if got := queued(p); len(got) != 0 {
		t.Fatalf("nothing told: queued %v, want none (no walk)", got)
	}
	p.Poke()
	if got := queued(p); !slices.Equal(got, []string{"b"}) {
		t.Fatalf("after Poke: queued %v, want b", got)
	}
	// An object of a kind the publisher does not compare changed: every
	// route is walked, b queued again.
	p.Changed(&corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: "apps", Name: "s"}})
	if got := queued(p); !slices.Equal(got, []string{"b"}) {
		t.Fatalf("a Secret changed: queued %v, want b", got)
	}
	// A new result: every route is looked up again.
	p.Applied(res)
	looked := p.looked
	if got := queued(p); !slices.Equal(got, []string{"b"}) || p.looked != looked+3 {
		t.Fatalf("a new result: queued %v, %d looked up, want b and 3", got, p.looked-looked)
	}
}

// beside is a Beside owning the objects its own reports true of.
type beside struct {
	own  func(any) bool
	told []any
}

func (b *beside) Add(*model.Config, gateway.Input) {}
func (b *beside) Applied()                         {}
func (b *beside) Changed(obj any) bool {
	if !b.own(obj) {
		return false
	}
	b.told = append(b.told, obj)
	return true
}

// An update no pass reads goes to the source beside when it is its own
// (an Ingress's status written: the publisher, told of an object that is
// not a route, would look at every route), to the publisher otherwise.
func TestQuietUpdateToItsOwner(t *testing.T) {
	ing := &netv1.Ingress{ObjectMeta: metav1.ObjectMeta{Namespace: "apps", Name: "i"}}
	route := &gwv1.HTTPRoute{ObjectMeta: metav1.ObjectMeta{Namespace: "apps", Name: "a"}}
	for _, tc := range []struct {
		name       string
		obj        any
		beside     bool
		publisher  int
		besideTold int
	}{
		{"an Ingress, with the Ingresses beside", ing, true, 0, 1},
		{"a route, with the Ingresses beside", route, true, 1, 0},
		{"a route, nothing beside", route, false, 1, 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, _, p := threeRoutes()
			p.take() // nothing told yet
			b := &beside{own: func(o any) bool { _, ok := o.(*netv1.Ingress); return ok }}
			l := &Loop{opts: Options{Publisher: p}}
			if tc.beside {
				l.opts.Beside = b
			}
			l.quiet(tc.obj)
			if len(p.changed) != tc.publisher || len(b.told) != tc.besideTold {
				t.Fatalf("publisher told %d, beside %d; want %d, %d", len(p.changed), len(b.told), tc.publisher, tc.besideTold)
			}
		})
	}
}

// Our own Gateway status write landing (after every new route: its
// listeners' attachedRoutes) has the Gateways compared again, and no
// route: a route's wanted status is the result's.
func TestGatewayChangeLooksAtTheGateways(t *testing.T) {
	objs, _, p := threeRoutes()
	allWritten(t, objs, p)
	key := gateway.Key{Namespace: "apps", Name: "gw"}
	p.last.Gateways = map[gateway.Key]gwv1.GatewayStatus{key: {Conditions: []metav1.Condition{{Type: "Accepted", Status: metav1.ConditionTrue, Reason: "Accepted"}}}}
	g := &gwv1.Gateway{ObjectMeta: metav1.ObjectMeta{Namespace: "apps", Name: "gw"}}
	objs.gateways = []*gwv1.Gateway{g}
	walks := p.enqueues // each walk of every route counts one
	p.Changed(g)
	if got := queued(p); !slices.Equal(got, []string{"gw"}) || p.enqueues != walks {
		t.Fatalf("a Gateway changed: queued %v, %d walks of every route; want gw and none", got, p.enqueues-walks)
	}
}
