package claims

import (
	"context"
	"net/netip"
	"slices"
	"testing"

	networkingv1 "k8s.io/api/networking/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes/fake"
	"k8s.io/client-go/util/workqueue"
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
	}{
		{"a wanted address is claimed", []Want{want("198.18.0.1", svc("a"))}, fakeCache{held: map[Parent]bool{svc("a"): true}}, nil,
			[]string{"ns/a"}},
		{"claimed meanwhile by another (not yet in the cache): AlreadyExists, left alone", []Want{want("198.18.0.1", svc("a"))},
			fakeCache{held: map[Parent]bool{svc("a"): true}}, []runtime.Object{ipOf(theirs)}, []string{"Gateway ns/g"}},
		{"an address the object no longer has is released", nil,
			fakeCache{claims: []*networkingv1.IPAddress{ipOf(mine)}, held: map[Parent]bool{svc("a"): true}}, []runtime.Object{ipOf(mine)}, nil},
		{"an object never held and gone by a consistent read: released", nil,
			fakeCache{claims: []*networkingv1.IPAddress{ipOf(theirs)}}, []runtime.Object{ipOf(theirs)}, nil},
		{"an object never held but there by a consistent read (the cache behind): kept", nil,
			fakeCache{claims: []*networkingv1.IPAddress{ipOf(theirs)}, live: map[Parent]bool{gw("g"): true}}, []runtime.Object{ipOf(theirs)},
			[]string{"Gateway ns/g"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			client := fake.NewClientset(tc.stored...)
			c := New(client, &tc.cache, Options{})
			c.Want(tc.want, map[types.UID]bool{svc("a").UID: true})
			q := workqueue.NewTypedRateLimitingQueue(workqueue.DefaultTypedControllerRateLimiter[netip.Addr]())
			defer q.ShutDown()
			c.enqueue(q)
			for q.Len() > 0 {
				k, _ := q.Get()
				if err := c.write(context.Background(), k); err != nil {
					t.Fatal(err)
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
		})
	}
}
