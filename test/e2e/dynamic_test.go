package e2e

import (
	"errors"
	"strings"

	"github.com/haproxy-k8s-sync/haproxy-k8s-sync/internal/render"
)

// readyForNewBackends checks that a config serves new backends with no
// reload: it has spare backends (--backend-pool) or, on HAProxy 3.4+,
// backends created at runtime from a class's named defaults
// (docs/backend-pool.md), which take no spare.
func readyForNewBackends(cfg string) error {
	if strings.Contains(cfg, "\nbackend _pool_") || strings.Contains(cfg, " from "+render.DynamicPrefix) {
		return nil
	}
	return errors.New("no spare backend and no backend created from a class's defaults")
}
