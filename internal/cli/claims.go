package cli

import (
	"context"
	"fmt"
	"log/slog"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"

	"github.com/haproxy-k8s-sync/haproxy-k8s-sync/internal/claims"
	"github.com/haproxy-k8s-sync/haproxy-k8s-sync/internal/metrics"
	"github.com/haproxy-k8s-sync/haproxy-k8s-sync/internal/source"
)

// newClaimer sets up the address claims of --address-pools
// (internal/claims) where the apiserver serves networking.k8s.io/v1
// IPAddresses (Kubernetes 1.33 and later): watch calls the source's
// WithClaims, and the Claimer writes through wclient at --claim-qps,
// counting its writes in rec (nil: metrics off).
// Elsewhere it warns and returns nil: addresses are then not claimed, and
// a Service and a Gateway given one free address at the same moment by
// the two modes may both publish it until the older keeps it. A role that
// may not list IPAddresses (this release's RBAC not applied) is an error
// that says so, rather than caches that never sync.
func newClaimer(ctx context.Context, client, wclient kubernetes.Interface, p publishFlags, watch func(), cache claims.Cache, rec *metrics.Claims, log *slog.Logger) (*claims.Claimer, error) {
	ok, err := source.ServesIPAddresses(client.Discovery())
	if err != nil {
		return nil, err
	}
	if !ok {
		log.Warn("the apiserver does not serve networking.k8s.io/v1 IPAddresses (Kubernetes 1.33 and later): pool addresses are not claimed, and the Services and gateway modes may both publish one address for a moment (docs/addresses.md)")
		return nil, nil
	}
	_, err = client.NetworkingV1().IPAddresses().List(ctx, metav1.ListOptions{LabelSelector: claims.Selector, Limit: 1})
	if apierrors.IsForbidden(err) {
		return nil, fmt.Errorf("--address-pools claims each address as a networking.k8s.io/v1 IPAddress, and this identity may not list them: grant list, watch, create and delete on ipaddresses (this release's deploy/ RBAC or chart): %w", err)
	}
	if err != nil {
		return nil, err
	}
	watch()
	return claims.New(wclient, cache, claims.Options{QPS: float32(p.claimQPS), Burst: p.claimBurst, Workers: 8, Logger: log, Metrics: rec}), nil
}
