package desired

import (
	"context"
	"strings"
	"testing"
	"time"
	"unsafe"

	discoveryv1 "k8s.io/api/discovery/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes/fake"
	"k8s.io/client-go/tools/cache"
)

// TestSliceMetaKeys: a Slice is keyed and versioned by client-go's stores
// as the EndpointSlice it was made of, with a metadata of 64 bytes
// rather than a whole ObjectMeta's 232 (issue 29).
func TestSliceMetaKeys(t *testing.T) {
	s := slice("ns", "web", 8080, ep{ip: "10.0.0.1", node: "n1", ready: true})
	s.ResourceVersion = "12"
	for _, tc := range []struct {
		name string
		got  func() (string, error)
		want string
	}{
		{"the informer's key", func() (string, error) { return cache.MetaNamespaceKeyFunc(s) }, "ns/web-abc"},
		{"the key of a deletion", func() (string, error) { return cache.DeletionHandlingMetaNamespaceKeyFunc(s) }, "ns/web-abc"},
		{"the resource version", func() (string, error) {
			a, err := meta.Accessor(s)
			if err != nil {
				return "", err
			}
			return a.GetResourceVersion(), nil
		}, "12"},
	} {
		if got, err := tc.got(); err != nil || got != tc.want {
			t.Errorf("%s: %q, %v; want %q", tc.name, got, err, tc.want)
		}
	}
	if n := unsafe.Sizeof(SliceMeta{}); n > 64 {
		t.Errorf("SliceMeta is %d bytes, want at most 64", n)
	}
}

// TestSliceMetaSetters: the four fields SliceMeta keeps are set as asked;
// a field it does not keep takes its zero (nil, empty, a zero time: a
// generic cleanup's SetManagedFields(nil)) and still reads as zero, and
// anything else panics, naming the field, rather than being lost.
func TestSliceMetaSetters(t *testing.T) {
	var m SliceMeta
	m.SetName("web-abc")
	m.SetNamespace("ns")
	m.SetUID("u1")
	m.SetResourceVersion("12")
	if m != (SliceMeta{Name: "web-abc", Namespace: "ns", UID: "u1", ResourceVersion: "12"}) {
		t.Errorf("kept fields: %+v", m)
	}
	now, grace := metav1.Now(), int64(30)
	for _, tc := range []struct {
		field   string
		zero    func(*SliceMeta)
		nonZero func(*SliceMeta)
	}{
		{"generateName", func(m *SliceMeta) { m.SetGenerateName("") }, func(m *SliceMeta) { m.SetGenerateName("web-") }},
		{"generation", func(m *SliceMeta) { m.SetGeneration(0) }, func(m *SliceMeta) { m.SetGeneration(2) }},
		{"selfLink", func(m *SliceMeta) { m.SetSelfLink("") }, func(m *SliceMeta) { m.SetSelfLink("/x") }},
		{"creationTimestamp", func(m *SliceMeta) { m.SetCreationTimestamp(metav1.Time{}) }, func(m *SliceMeta) { m.SetCreationTimestamp(now) }},
		{"deletionTimestamp", func(m *SliceMeta) { m.SetDeletionTimestamp(nil) }, func(m *SliceMeta) { m.SetDeletionTimestamp(&now) }},
		{"deletionGracePeriodSeconds", func(m *SliceMeta) { m.SetDeletionGracePeriodSeconds(nil) }, func(m *SliceMeta) { m.SetDeletionGracePeriodSeconds(&grace) }},
		{"labels", func(m *SliceMeta) { m.SetLabels(map[string]string{}) }, func(m *SliceMeta) { m.SetLabels(map[string]string{"a": "b"}) }},
		{"annotations", func(m *SliceMeta) { m.SetAnnotations(nil) }, func(m *SliceMeta) { m.SetAnnotations(map[string]string{"a": "b"}) }},
		{"finalizers", func(m *SliceMeta) { m.SetFinalizers(nil) }, func(m *SliceMeta) { m.SetFinalizers([]string{"f"}) }},
		{"ownerReferences", func(m *SliceMeta) { m.SetOwnerReferences(nil) }, func(m *SliceMeta) { m.SetOwnerReferences([]metav1.OwnerReference{{Name: "o"}}) }},
		{"managedFields", func(m *SliceMeta) { m.SetManagedFields(nil) }, func(m *SliceMeta) { m.SetManagedFields([]metav1.ManagedFieldsEntry{{Manager: "m"}}) }},
	} {
		t.Run(tc.field, func(t *testing.T) {
			m := m
			tc.zero(&m)
			if !unkeptZero(&m) {
				t.Errorf("after its zero was set a field it does not keep reads as set: %+v", m)
			}
			defer func() {
				r := recover()
				if msg, _ := r.(string); !strings.Contains(msg, "keeps no "+tc.field+":") {
					t.Errorf("a value set: recovered %v; want a panic naming %s", r, tc.field)
				}
			}()
			tc.nonZero(&m)
		})
	}
}

// unkeptZero reports whether every field SliceMeta does not keep reads
// as zero.
func unkeptZero(m *SliceMeta) bool {
	return m.GetGenerateName() == "" && m.GetGeneration() == 0 && m.GetSelfLink() == "" &&
		m.GetCreationTimestamp().Time.IsZero() && m.GetDeletionTimestamp() == nil && m.GetDeletionGracePeriodSeconds() == nil &&
		m.GetLabels() == nil && m.GetAnnotations() == nil && m.GetFinalizers() == nil &&
		m.GetOwnerReferences() == nil && m.GetManagedFields() == nil
}

// TestSliceInformer: client-go's informer keeps Slices made by a transform
// (as source.Slim makes them) through adds, updates and deletes without
// setting any field SliceMeta does not keep (it would panic): it only
// reads them.
func TestSliceInformer(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	client := fake.NewClientset()
	f := informers.NewSharedInformerFactoryWithOptions(client, 0, informers.WithTransform(func(obj any) (any, error) {
		if es, ok := obj.(*discoveryv1.EndpointSlice); ok {
			return SliceOf(es), nil
		}
		return obj, nil
	}))
	inf := f.Discovery().V1().EndpointSlices().Informer()
	events := make(chan string, 16)
	_, err := inf.AddEventHandler(cache.ResourceEventHandlerFuncs{
		AddFunc:    func(obj any) { events <- "add " + obj.(*Slice).ResourceVersion },
		UpdateFunc: func(_, obj any) { events <- "update " + obj.(*Slice).Service },
		DeleteFunc: func(obj any) { k, _ := cache.DeletionHandlingMetaNamespaceKeyFunc(obj); events <- "delete " + k },
	})
	if err != nil {
		t.Fatal(err)
	}
	f.Start(ctx.Done())
	defer func() { cancel(); f.Shutdown() }() // the informers stop once ctx is done
	if !cache.WaitForCacheSync(ctx.Done(), inf.HasSynced) {
		t.Fatal("not synced")
	}
	es := &discoveryv1.EndpointSlice{
		ObjectMeta: metav1.ObjectMeta{Name: "web-abc", Namespace: "ns", ResourceVersion: "1", Labels: map[string]string{discoveryv1.LabelServiceName: "web"},
			Annotations: map[string]string{"a": "b"}, Finalizers: []string{"f"}, ManagedFields: []metav1.ManagedFieldsEntry{{Manager: "m"}}},
		AddressType: discoveryv1.AddressTypeIPv4,
	}
	slices := client.DiscoveryV1().EndpointSlices("ns")
	next := func(want string) {
		t.Helper()
		select {
		case got := <-events:
			if got != want {
				t.Fatalf("event %q, want %q", got, want)
			}
		case <-ctx.Done():
			t.Fatalf("no event %q: %v", want, ctx.Err())
		}
	}
	if _, err := slices.Create(ctx, es, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	next("add 1")
	es.Labels[discoveryv1.LabelServiceName] = "web2"
	if _, err := slices.Update(ctx, es, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	next("update web2")
	if err := slices.Delete(ctx, es.Name, metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	next("delete ns/web-abc")
}
