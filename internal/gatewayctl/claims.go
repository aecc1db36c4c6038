package gatewayctl

import (
	"slices"

	"k8s.io/apimachinery/pkg/types"
	gwv1 "sigs.k8s.io/gateway-api/apis/v1"

	"github.com/haproxy-k8s-sync/haproxy-k8s-sync/internal/claims"
	"github.com/haproxy-k8s-sync/haproxy-k8s-sync/internal/gateway"
	"github.com/haproxy-k8s-sync/haproxy-k8s-sync/internal/pools"
)

// PooledBeside is a Beside whose objects take addresses from the pools
// with the Gateways (ingressctl.Server: an IngressClass naming a pool).
type PooledBeside interface {
	// PoolRequests are its requests of the pass; c: the pass's claims
	// (nil: none are made).
	PoolRequests(in gateway.Input, c pools.Claims) []pools.Request
	// PoolGiven takes what the pass gave them (before Add), and returns
	// the claims to want for them and the objects it answers for.
	PoolGiven(given map[string]gateway.Given) ([]claims.Want, map[types.UID]bool)
}

// besideWants adds b's wants (PoolGiven) to the Gateways'.
func besideWants(b PooledBeside, given map[string]gateway.Given, w []claims.Want, mine map[types.UID]bool) ([]claims.Want, map[types.UID]bool) {
	bw, bm := b.PoolGiven(given)
	if len(bw) > 0 {
		w = append(w, bw...)
		slices.SortFunc(w, func(a, b claims.Want) int { return a.Addr.Compare(b.Addr) })
	}
	for u := range bm {
		mine[u] = true
	}
	return w, mine
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
