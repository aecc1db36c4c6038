package gatewayctl

import (
	"slices"

	networkingv1 "k8s.io/api/networking/v1"
	"k8s.io/apimachinery/pkg/types"
	gwv1 "sigs.k8s.io/gateway-api/apis/v1"

	"github.com/haproxy-k8s-sync/haproxy-k8s-sync/internal/claims"
	"github.com/haproxy-k8s-sync/haproxy-k8s-sync/internal/gateway"
	"github.com/haproxy-k8s-sync/haproxy-k8s-sync/internal/pools"
)

// readClaims is what the allocation needs of the cached claims.
func readClaims(ips []*networkingv1.IPAddress) pools.Claims {
	cs := make([]claims.Claim, 0, len(ips))
	for _, ip := range ips {
		if c, ok := claims.Read(ip); ok {
			cs = append(cs, c)
		}
	}
	return claims.ToPools(cs)
}

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
