package source

import (
	"context"
	"fmt"
	"math/rand/v2"
	"slices"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes/fake"
	"k8s.io/client-go/tools/cache"
)

// The pass a Service's event asks for sees that Service: the live slice
// changed before the handlers ran (they run from its listener).
func TestLiveChangedBeforeHandlers(t *testing.T) {
	c := fake.NewClientset()
	s := New(c, "")
	seen := make(chan int, 100)
	set := s.current()
	if err := s.OnChange(func() {
		svcs, _ := set.liveSvcs.into(nil)
		seen <- len(svcs)
	}); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	if err := s.Start(ctx, 10*time.Second); err != nil {
		t.Fatal(err)
	}
	for k := 1; k <= 20; k++ {
		svc := &corev1.Service{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: fmt.Sprint("svc", k)}}
		if _, err := c.CoreV1().Services("ns").Create(ctx, svc, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
		select {
		case n := <-seen:
			if n != k {
				t.Fatalf("the handler of Service %d's add saw %d Services", k, n)
			}
		case <-time.After(10 * time.Second):
			t.Fatalf("no handler ran for Service %d", k)
		}
	}
}

// After adds, updates and deletes in random order (a watch's delete
// hands the object's last state, another object than the store held),
// Snapshot holds exactly the store's objects, from the live slices.
func TestLiveFollowsTheStore(t *testing.T) {
	c := fake.NewClientset()
	s := New(c, "")
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	if err := s.Start(ctx, 10*time.Second); err != nil {
		t.Fatal(err)
	}
	rng := rand.New(rand.NewPCG(29, 1))
	const n = 40
	exists := make([]bool, n)
	for range 150 {
		i := rng.IntN(n)
		name := fmt.Sprint("o", i)
		var err error
		switch {
		case !exists[i]:
			_, err = c.CoreV1().Services("ns").Create(ctx, &corev1.Service{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: name}}, metav1.CreateOptions{})
			if err == nil {
				_, err = c.DiscoveryV1().EndpointSlices("ns").Create(ctx, &discoveryv1.EndpointSlice{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: name,
					Labels: map[string]string{discoveryv1.LabelServiceName: name}}, AddressType: discoveryv1.AddressTypeIPv4}, metav1.CreateOptions{})
			}
			if err == nil {
				_, err = c.CoreV1().Nodes().Create(ctx, &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: name}}, metav1.CreateOptions{})
			}
			exists[i] = true
		case rng.IntN(2) == 0:
			_, err = c.CoreV1().Services("ns").Update(ctx, &corev1.Service{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: name,
				Annotations: map[string]string{"n": fmt.Sprint(rng.Int())}}}, metav1.UpdateOptions{})
			if err == nil {
				_, err = c.CoreV1().Nodes().Update(ctx, &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: name,
					Labels: map[string]string{"n": fmt.Sprint(rng.Int())}}}, metav1.UpdateOptions{})
			}
		default:
			err = c.CoreV1().Services("ns").Delete(ctx, name, metav1.DeleteOptions{})
			if err == nil {
				err = c.DiscoveryV1().EndpointSlices("ns").Delete(ctx, name, metav1.DeleteOptions{})
			}
			if err == nil {
				err = c.CoreV1().Nodes().Delete(ctx, name, metav1.DeleteOptions{})
			}
			exists[i] = false
		}
		if err != nil {
			t.Fatal(err)
		}
	}
	set := s.current()
	same := func() error {
		svcs, eps, nodes := s.Snapshot()
		if err := sameObjects(svcs, set.services.GetStore().List()); err != nil {
			return fmt.Errorf("Services: %w", err)
		}
		if err := sameObjects(eps, set.slices.GetStore().List()); err != nil {
			return fmt.Errorf("EndpointSlices: %w", err)
		}
		if err := sameObjects(nodes, set.nodes.GetStore().List()); err != nil {
			return fmt.Errorf("Nodes: %w", err)
		}
		return nil
	}
	var err error
	for deadline := time.Now().Add(10 * time.Second); time.Now().Before(deadline); time.Sleep(5 * time.Millisecond) { // poll
		if err = same(); err == nil {
			break
		}
	}
	if err != nil {
		t.Fatal(err)
	}
	for _, l := range []bool{set.liveSvcs.broken, set.liveSlices.broken, set.liveNodes.broken} {
		if l {
			t.Fatal("a live slice broke: Snapshot listed the store")
		}
	}
}

// sameObjects reports how got (pointers) differs from the store's list.
func sameObjects[T comparable](got []T, store []any) error {
	want := make([]T, 0, len(store))
	for _, o := range store {
		want = append(want, o.(T))
	}
	if len(got) != len(want) {
		return fmt.Errorf("%d objects, the store %d", len(got), len(want))
	}
	for _, o := range want {
		if !slices.Contains(got, o) {
			return fmt.Errorf("the store's %v is missing", o)
		}
	}
	return nil
}

// An event that does not match what the slice holds breaks it: into
// says so, and Snapshot lists the store.
func TestLiveBroken(t *testing.T) {
	a := &corev1.Service{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "a"}}
	b := &corev1.Service{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "b"}}
	for _, tc := range []struct {
		name  string
		event func(l *live[*corev1.Service])
	}{
		{"update of an unknown object", func(l *live[*corev1.Service]) { l.update(b, a) }},
		{"delete of an unknown object", func(l *live[*corev1.Service]) { l.del(cache.DeletedFinalStateUnknown{Key: "x", Obj: b}) }},
		{"added twice", func(l *live[*corev1.Service]) { l.add(a) }},
		{"another kind", func(l *live[*corev1.Service]) { l.add(&corev1.Node{}) }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			l := &live[*corev1.Service]{at: make(map[*corev1.Service]int)}
			l.add(a)
			if got, ok := l.into(nil); !ok || len(got) != 1 {
				t.Fatalf("into: %v, %v", got, ok)
			}
			tc.event(l)
			if _, ok := l.into(nil); ok {
				t.Fatal("not broken")
			}
		})
	}
}
