package ingressctl

import (
	"net/netip"
	"slices"
	"strconv"
	"testing"

	corev1 "k8s.io/api/core/v1"
	netv1 "k8s.io/api/networking/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/util/workqueue"

	"github.com/haproxy-k8s-sync/haproxy-k8s-sync/internal/ingress"
)

// fakeCache is the informer cache of Ingresses, by name in namespace a.
type fakeCache map[string]*netv1.Ingress

func (c fakeCache) Ingresses() ([]*netv1.IngressClass, []*netv1.Ingress) {
	var out []*netv1.Ingress
	for _, ing := range c {
		out = append(out, ing)
	}
	return nil, out
}

func (c fakeCache) IngressObject(namespace, name string) (*netv1.Ingress, bool) {
	ing, ok := c[name]
	return ing, ok && namespace == "a"
}

func (c fakeCache) IngressConfigMaps() map[ingress.Key]*corev1.ConfigMap { return nil }

// queuedBy runs one enqueue and returns the names it queued, sorted, and
// how many Ingresses it compared.
func queuedBy(s *Server) ([]string, int) {
	q := workqueue.NewTypedRateLimitingQueue(workqueue.DefaultTypedControllerRateLimiter[ingress.Key]())
	defer q.ShutDown()
	looked := s.looked
	s.enqueue(q)
	var out []string
	for q.Len() > 0 {
		k, _ := q.Get()
		out = append(out, k.Name)
		q.Done(k)
	}
	slices.Sort(out)
	return out, s.looked - looked
}

// TestEnqueueLooksAtWhatChanged: after the first walk, an enqueue compares
// only the Ingresses whose entry in what runs changed (served anew, no
// longer, other addresses) or whose status the informer told of, and
// still queues each of them whose status differs; one changed behind its
// back waits for the next walk of every Ingress (a new leader, or more
// keys than it remembers).
func TestEnqueueLooksAtWhatChanged(t *testing.T) {
	lb := []netip.Addr{netip.MustParseAddr("192.0.2.10")}
	other := []netip.Addr{netip.MustParseAddr("192.0.2.11")}
	ours := []netv1.IngressLoadBalancerIngress{{IP: "192.0.2.10"}}
	theirs := []netv1.IngressLoadBalancerIngress{{IP: "198.51.100.7"}}
	c := fakeCache{}
	s := newServer(c, Options{Ingress: ingress.Options{Addresses: lb}})
	served := func(names ...string) map[ingress.Key][]netip.Addr {
		m := map[ingress.Key][]netip.Addr{}
		for _, n := range names {
			m[ingress.Key{Namespace: "a", Name: n}] = lb
		}
		return m
	}
	// status sets name's status in the cache (a new object, as the
	// informer holds), telling the server when told.
	status := func(name string, lbs []netv1.IngressLoadBalancerIngress, told bool) {
		ing := &netv1.Ingress{ObjectMeta: metav1.ObjectMeta{Namespace: "a", Name: name}}
		if old, ok := c[name]; ok {
			ing = old.DeepCopy()
		}
		ing.Status.LoadBalancer.Ingress = lbs
		c[name] = ing
		if told && !s.Changed(ing) {
			t.Fatalf("Changed(%s) = false, want true", name)
		}
	}
	for _, n := range []string{"a1", "a2", "a3"} {
		status(n, nil, false)
	}
	for _, step := range []struct {
		name   string
		do     func()
		want   []string
		looked int
	}{
		{"a new leader walks every Ingress", func() {
			s.lookAtEverything()
			s.pending = ingress.Result{Served: served("a1", "a2", "a3")}
			s.Applied()
		}, []string{"a1", "a2", "a3"}, 3},
		{"the writes landed: only those told compared", func() {
			status("a1", ours, true)
			status("a2", ours, true)
		}, nil, 2},
		{"another controller overwrote a3's", func() { status("a3", theirs, true) }, []string{"a3"}, 1},
		{"a3 written, then overwritten behind our back: not looked at", func() {
			status("a3", ours, true)
			s.take()
			status("a3", theirs, false)
		}, nil, 0},
		{"a4 created and served: a4 alone", func() {
			status("a4", nil, false)
			s.pending = ingress.Result{Served: served("a1", "a2", "a3", "a4")}
			s.Applied()
		}, []string{"a4"}, 1},
		{"a1 no longer served: a1 alone, ours removed", func() {
			s.pending = ingress.Result{Served: served("a2", "a3", "a4")}
			s.Applied()
		}, []string{"a1"}, 1},
		{"a2 on other addresses: a2 alone", func() {
			m := served("a3", "a4")
			m[ingress.Key{Namespace: "a", Name: "a2"}] = other
			s.pending = ingress.Result{Served: m}
			s.Applied()
		}, []string{"a2"}, 1},
		{"a deleted Ingress told of: nothing to write", func() {
			ing := c["a4"]
			delete(c, "a4")
			s.Changed(ing)
		}, nil, 0},
		{"an object that is not an Ingress is not ours", func() {
			if s.Changed(&netv1.IngressClass{}) {
				t.Fatal("Changed(IngressClass) = true, want false")
			}
		}, nil, 0},
		{"more keys than remembered: every Ingress walked, a3 found", func() {
			for i := range maxDirty + 1 {
				s.Changed(&netv1.Ingress{ObjectMeta: metav1.ObjectMeta{Namespace: "b", Name: strconv.Itoa(i)}})
			}
		}, []string{"a1", "a2", "a3"}, 3},
	} {
		step.do()
		got, looked := queuedBy(s)
		if !slices.Equal(got, step.want) || looked != step.looked {
			t.Fatalf("%s: queued %v, %d compared; want %v, %d", step.name, got, looked, step.want, step.looked)
		}
	}
}
