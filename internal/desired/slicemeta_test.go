package desired

import (
	"testing"
	"unsafe"

	"k8s.io/apimachinery/pkg/api/meta"
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
