package conformance

import (
	"context"
	"testing"

	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/rest"

	"github.com/haproxy-k8s-sync/haproxy-k8s-sync/internal/testing/poolcrd"
)

// installPool installs the AddressPool CRD (deploy/crds) and one pool,
// gatewayPool, handed out automatically.
func installPool(t *testing.T, cfg *rest.Config) {
	t.Helper()
	dyn, err := dynamic.NewForConfig(cfg)
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	if err := poolcrd.Install(ctx, dyn, poolcrd.File("../..")); err != nil {
		t.Fatal(err)
	}
	if err := poolcrd.Create(ctx, dyn, "conformance", map[string]any{"addresses": []any{gatewayPool}}); err != nil {
		t.Fatalf("AddressPool: %v", err)
	}
}
