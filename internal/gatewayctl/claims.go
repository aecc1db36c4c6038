package gatewayctl

import (
	"slices"

	"k8s.io/apimachinery/pkg/types"
	gwv1 "sigs.k8s.io/gateway-api/apis/v1"

	"github.com/haproxy-k8s-sync/haproxy-k8s-sync/internal/claims"
	"github.com/haproxy-k8s-sync/haproxy-k8s-sync/internal/gateway"
	"github.com/haproxy-k8s-sync/haproxy-k8s-sync/internal/pools"
)

// wants are the addresses a pass gave the Gateways (used and being
// claimed), for the Claimer, in a stable order; mine, the Gateways whose
// claims it answers for: those of our classes (res.Gateways), not
// another Gateway controller's.
func wants(gws []*gwv1.Gateway, res gateway.Result) ([]claims.Want, map[types.UID]bool) {
	var out []claims.Want
	mine := make(map[types.UID]bool, len(res.Gateways))
	for _, g := range gws {
		k := gateway.Key{Namespace: g.Namespace, Name: g.Name}
		if _, ok := res.Gateways[k]; ok {
			mine[g.UID] = true
		}
		for _, a := range res.Assigned[k] {
			out = append(out, claims.Want{Addr: a, ShareKey: g.Annotations[pools.SharedIPAnnotation],
				Parent: claims.Parent{Kind: claims.Gateway, Namespace: g.Namespace, Name: g.Name, UID: g.UID}})
		}
	}
	slices.SortFunc(out, func(a, b claims.Want) int { return a.Addr.Compare(b.Addr) })
	return out, mine
}
