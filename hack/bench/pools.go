package main

import (
	"context"
	"fmt"
	"net/netip"
	"os"

	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/rest"

	"github.com/haproxy-k8s-sync/haproxy-k8s-sync/internal/testing/poolcrd"
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
	return c.servedAt(i)
}

// installPool creates the shipped AddressPool CRD and the bench's pool.
func installPool(ctx context.Context, cfg *rest.Config) error {
	dyn, err := dynamic.NewForConfig(cfg)
	if err != nil {
		return err
	}
	file := poolcrd.File(".")
	if _, err := os.Stat(file); err != nil {
		return fmt.Errorf("-pools: run from the repository root: %w", err)
	}
	if err := poolcrd.Install(ctx, dyn, file); err != nil {
		return err
	}
	return poolcrd.Create(ctx, dyn, "bench", map[string]any{"addresses": []any{"127.64.0.0/16"}})
}
