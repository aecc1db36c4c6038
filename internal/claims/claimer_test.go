package claims

import (
	"context"
	"errors"
	"net/netip"
	"slices"
	"testing"

	networkingv1 "k8s.io/api/networking/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes/fake"
	clienttesting "k8s.io/client-go/testing"
	"k8s.io/client-go/util/workqueue"

	"github.com/haproxy-k8s-sync/haproxy-k8s-sync/internal/metrics"
)

// fakeCache: the claims the informer holds, the objects it holds, and
// what a consistent read finds.
type fakeCache struct {
	claims []*networkingv1.IPAddress
	held   map[Parent]bool
	live   map[Parent]bool
}

func (f *fakeCache) Claims() []*networkingv1.IPAddress { return f.claims }
func (f *fakeCache) Synced() bool                      { return true }
func (f *fakeCache) Exists(p Parent) Existence {
	if f.held[p] {
		return Exists
	}
	return Gone
}
func (f *fakeCache) Lookup(_ context.Context, p Parent) (Existence, error) {
	if f.live[p] {
		return Exists, nil
	}
	return Gone, nil
}

func ipOf(c Claim) *networkingv1.IPAddress {
	ip := c.IPAddress()
	ip.UID = c.UID
	return ip
}

// The Claimer against a fake clientset (the apiserver's behaviour that
// matters here, one object per name, is TestPoolAddressRace's, on a real
// one): what it creates and deletes from one plan.
func TestClaimerWrites(t *testing.T) {
	a := netip.MustParseAddr("198.18.0.1")
	mine := Claim{Addr: a, Parent: svc("a"), UID: "ip-1"}
	theirs := Claim{Addr: a, Parent: gw("g"), UID: "ip-2"}
	for _, tc := range []struct {
		name   string
		want   []Want
		cache  fakeCache
		stored []runtime.Object // in the apiserver
		after  []string         // the IPAddresses' parents then, "" for none
		fail   bool             // the apiserver refuses every write (RBAC)
		writes []string         // the counts of haproxy_k8s_sync_address_claim_writes_total that moved, "operation/result"
	}{
		{"a wanted address is claimed", []Want{want("198.18.0.1", svc("a"))}, fakeCache{held: map[Parent]bool{svc("a"): true}}, nil,
			[]string{"ns/a"}, false, []string{"create/created"}},
		{"claimed meanwhile by another (not yet in the cache): AlreadyExists, left alone", []Want{want("198.18.0.1", svc("a"))},
			fakeCache{held: map[Parent]bool{svc("a"): true}}, []runtime.Object{ipOf(theirs)}, []string{"Gateway ns/g"}, false, []string{"create/taken"}},
		{"an address the object no longer has is released", nil,
			fakeCache{claims: []*networkingv1.IPAddress{ipOf(mine)}, held: map[Parent]bool{svc("a"): true}}, []runtime.Object{ipOf(mine)}, nil,
			false, []string{"delete/released"}},
		{"a release of a claim gone meanwhile: NotFound, nothing to do", nil,
			fakeCache{claims: []*networkingv1.IPAddress{ipOf(mine)}, held: map[Parent]bool{svc("a"): true}}, nil, nil,
			false, []string{"delete/gone"}},
		{"an object never held and gone by a consistent read: released", nil,
			fakeCache{claims: []*networkingv1.IPAddress{ipOf(theirs)}}, []runtime.Object{ipOf(theirs)}, nil, false, []string{"delete/released"}},
		{"an object never held but there by a consistent read (the cache behind): kept", nil,
			fakeCache{claims: []*networkingv1.IPAddress{ipOf(theirs)}, live: map[Parent]bool{gw("g"): true}}, []runtime.Object{ipOf(theirs)},
			[]string{"Gateway ns/g"}, false, nil},
		{"a create refused (RBAC): counted as failed", []Want{want("198.18.0.1", svc("a"))}, fakeCache{held: map[Parent]bool{svc("a"): true}}, nil,
			nil, true, []string{"create/failed"}},
		{"a delete refused (RBAC): counted as failed", nil,
			fakeCache{claims: []*networkingv1.IPAddress{ipOf(mine)}, held: map[Parent]bool{svc("a"): true}}, []runtime.Object{ipOf(mine)},
			[]string{"ns/a"}, true, []string{"delete/failed"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			client := fake.NewClientset(tc.stored...)
			if tc.fail {
				client.PrependReactor("*", "ipaddresses", func(a clienttesting.Action) (bool, runtime.Object, error) {
					if a.GetVerb() == "create" || a.GetVerb() == "delete" {
						return true, nil, apierrors.NewForbidden(networkingv1.Resource("ipaddresses"), "", errors.New("RBAC"))
					}
					return false, nil, nil
				})
			}
			reg := metrics.New(metrics.Options{})
			c := New(client, &tc.cache, Options{Metrics: reg.Claims()})
			c.Want(tc.want, map[types.UID]bool{svc("a").UID: true})
			q := workqueue.NewTypedRateLimitingQueue(workqueue.DefaultTypedControllerRateLimiter[netip.Addr]())
			defer q.ShutDown()
			c.enqueue(q)
			for q.Len() > 0 {
				k, _ := q.Get()
				if err := c.write(context.Background(), k); (err != nil) != tc.fail {
					t.Fatalf("write: %v, want an error: %v", err, tc.fail)
				}
				q.Done(k)
			}
			l, err := client.NetworkingV1().IPAddresses().List(context.Background(), metav1.ListOptions{})
			if err != nil {
				t.Fatal(err)
			}
			var got []string
			for i := range l.Items {
				cl, ok := Read(&l.Items[i])
				if !ok {
					t.Fatalf("not readable as a claim: %+v", l.Items[i])
				}
				got = append(got, cl.Parent.Key())
			}
			if !slices.Equal(got, tc.after) {
				t.Errorf("claims after: %v, want %v", got, tc.after)
			}
			if n := gather(t, reg, "haproxy_k8s_sync_address_claims")[0].value; n != float64(len(tc.cache.claims)) {
				t.Errorf("haproxy_k8s_sync_address_claims = %v, want %d", n, len(tc.cache.claims))
			}
			var moved []string
			for _, m := range gather(t, reg, "haproxy_k8s_sync_address_claim_writes_total") {
				if m.value != 0 {
					moved = append(moved, m.labels["operation"]+"/"+m.labels["result"])
				}
			}
			if !slices.Equal(moved, tc.writes) {
				t.Errorf("claim writes counted: %v, want %v", moved, tc.writes)
			}
		})
	}
}

type sample struct {
	labels map[string]string
	value  float64
}

// gather returns the samples of the counter or gauge name in reg, in the
// registry's order (sorted by labels).
func gather(t *testing.T, reg *metrics.Registry, name string) []sample {
	t.Helper()
	mfs, err := reg.Gatherer().Gather()
	if err != nil {
		t.Fatal(err)
	}
	var out []sample
	for _, mf := range mfs {
		if mf.GetName() != name {
			continue
		}
		for _, m := range mf.GetMetric() {
			l := map[string]string{}
			for _, lp := range m.GetLabel() {
				l[lp.GetName()] = lp.GetValue()
			}
			out = append(out, sample{l, m.GetCounter().GetValue() + m.GetGauge().GetValue()})
		}
	}
	if len(out) == 0 {
		t.Fatalf("no series %s", name)
	}
	return out
}
