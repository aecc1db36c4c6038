package cli

import (
	"context"
	"errors"

	"github.com/haproxy-k8s-sync/haproxy-k8s-sync/internal/metrics"
)

// configured is the health gate's readiness beside the local HAProxy:
// the informer caches synced and a configuration applied once (inst
// nil, metrics off: not known, so not asked). It asks nothing of the
// apiserver and does not follow the last pass: HAProxy serving the last
// applied configuration is what the gate's other part checks, and a pass
// that failed (during an apiserver outage: the claims, status and
// leader election fail) is no failure of the data plane.
func configured(synced func() bool, inst *metrics.Instance) func(context.Context) error {
	return func(context.Context) error {
		if !synced() {
			return errors.New("informer caches not synced")
		}
		if inst != nil && !inst.Configured() {
			return errors.New("no configuration applied yet")
		}
		return nil
	}
}
