package source

import (
	"context"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes/fake"
)

// The Services and EndpointSlices caches keep no namespace index (nothing
// lists by namespace; at 10,000 Services the index is ~2 MB of heap), and
// a namespaced source still watches its namespace alone.
func TestCachesWithoutNamespaceIndex(t *testing.T) {
	objs := func() []*corev1.Service {
		return []*corev1.Service{
			{ObjectMeta: metav1.ObjectMeta{Namespace: "a", Name: "one"}},
			{ObjectMeta: metav1.ObjectMeta{Namespace: "b", Name: "two"}},
		}
	}
	for _, tt := range []struct {
		namespace string
		want      int
	}{{"", 2}, {"a", 1}} {
		t.Run("namespace="+tt.namespace, func(t *testing.T) {
			c := fake.NewClientset()
			for _, o := range objs() {
				if _, err := c.CoreV1().Services(o.Namespace).Create(context.Background(), o, metav1.CreateOptions{}); err != nil {
					t.Fatal(err)
				}
			}
			s := New(c, tt.namespace)
			set := s.current()
			if ix := set.services.GetIndexer().GetIndexers(); len(ix) != 0 {
				t.Errorf("Services cache has indexes %v", keys(ix))
			}
			if ix := set.slices.GetIndexer().GetIndexers(); len(ix) != 0 {
				t.Errorf("EndpointSlices cache has indexes %v", keys(ix))
			}
			ctx, cancel := context.WithCancel(context.Background())
			defer cancel()
			if err := s.Start(ctx, 10*time.Second); err != nil {
				t.Fatal(err)
			}
			svcs, _, _ := s.Snapshot()
			if len(svcs) != tt.want {
				t.Errorf("%d Services cached, want %d", len(svcs), tt.want)
			}
		})
	}
}

func keys[V any](m map[string]V) []string {
	var out []string
	for k := range m {
		out = append(out, k)
	}
	return out
}
