package conformance

import (
	"context"
	"os"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/yaml"

	"github.com/haproxy-k8s-sync/haproxy-k8s-sync/internal/pools"
)

var crdGVR = schema.GroupVersionResource{Group: "apiextensions.k8s.io", Version: "v1", Resource: "customresourcedefinitions"}

// installPool installs the AddressPool CRD (deploy/crds) and one pool,
// gatewayPool, handed out automatically.
func installPool(t *testing.T, cfg *rest.Config) {
	t.Helper()
	dyn, err := dynamic.NewForConfig(cfg)
	if err != nil {
		t.Fatal(err)
	}
	raw, err := os.ReadFile("../../deploy/crds/addresspools.yaml")
	if err != nil {
		t.Fatal(err)
	}
	var obj map[string]any
	if err := yaml.Unmarshal(raw, &obj); err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	if _, err := dyn.Resource(crdGVR).Create(ctx, &unstructured.Unstructured{Object: obj}, metav1.CreateOptions{}); err != nil {
		t.Fatalf("AddressPool CRD: %v", err)
	}
	if err := waitUntil(30*time.Second, func() error {
		_, err := dyn.Resource(pools.GVR).List(ctx, metav1.ListOptions{})
		return err
	}); err != nil {
		t.Fatal(err)
	}
	if _, err := dyn.Resource(pools.GVR).Create(ctx, &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": pools.GVR.GroupVersion().String(), "kind": "AddressPool",
		"metadata": map[string]any{"name": "conformance"},
		"spec":     map[string]any{"addresses": []any{gatewayPool}},
	}}, metav1.CreateOptions{}); err != nil {
		t.Fatalf("AddressPool: %v", err)
	}
}
