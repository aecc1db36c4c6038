package main

import (
	"context"
	"fmt"
	"net/netip"
	"os"
	"strconv"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/yaml"

	"github.com/haproxy-k8s-sync/haproxy-k8s-sync/internal/pools"
)

// With -pools every Service gets its own address from one AddressPool
// (--address-pools) instead of sharing 127.0.0.1: the pool is on
// loopback (127.64.0.0/16, local to the host without any route, so no
// packet leaves it), and Service i, allocated in creation order, has
// poolFirst + i.
var poolFirst = netip.MustParseAddr("127.64.0.0")

// poolAddr is where Service i listens with -pools.
func poolAddr(i, port int) string {
	a := poolFirst
	for range i {
		a = a.Next()
	}
	return netip.AddrPortFrom(a, uint16(port)).String()
}

// frontendAddr is where Service i listens.
func (c *config) frontendAddr(i int) string {
	if c.pools {
		return poolAddr(i, c.feBase+i)
	}
	return "127.0.0.1:" + strconv.Itoa(c.feBase+i)
}

// installPool creates the shipped AddressPool CRD and the bench's pool.
func installPool(ctx context.Context, cfg *rest.Config) error {
	dyn, err := dynamic.NewForConfig(cfg)
	if err != nil {
		return err
	}
	raw, err := os.ReadFile("deploy/crds/addresspools.yaml")
	if err != nil {
		return fmt.Errorf("-pools: run from the repository root: %w", err)
	}
	var crd map[string]any
	if err := yaml.Unmarshal(raw, &crd); err != nil {
		return err
	}
	gvr := schema.GroupVersionResource{Group: "apiextensions.k8s.io", Version: "v1", Resource: "customresourcedefinitions"}
	if _, err := dyn.Resource(gvr).Create(ctx, &unstructured.Unstructured{Object: crd}, metav1.CreateOptions{}); err != nil {
		return err
	}
	pool := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "haproxy-k8s-sync.io/v1alpha1", "kind": "AddressPool", "metadata": map[string]any{"name": "bench"},
		"spec": map[string]any{"addresses": []any{"127.64.0.0/16"}},
	}}
	deadline := time.Now().Add(30 * time.Second)
	for {
		_, err = dyn.Resource(pools.GVR).Create(ctx, pool, metav1.CreateOptions{})
		if err == nil || time.Now().After(deadline) {
			return err
		}
		time.Sleep(100 * time.Millisecond) // the CRD becomes served; a bounded poll
	}
}
