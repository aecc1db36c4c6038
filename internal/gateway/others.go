package gateway

import (
	"net/netip"
	"slices"

	"github.com/haproxy-k8s-sync/haproxy-k8s-sync/internal/pools"
)

// Given is what the pools gave one of Options.Others in a pass.
type Given struct {
	// Addrs may be bound and published: claimed for it (or, without
	// claims, given).
	Addrs []netip.Addr
	// Pending are given but being claimed: not to be used yet.
	Pending []netip.Addr
	// Problems say why it has no address (none of its pool free, no
	// such pool, ...); a pass with a problem gives no address.
	Problems []pools.Problem
}

// othersGiven is what res gave each of others (by key), its claimed
// addresses split from those being claimed as a Gateway's are.
func othersGiven(others []pools.Request, res pools.Result, c pools.Claims) map[string]Given {
	if len(others) == 0 {
		return nil
	}
	out := make(map[string]Given, len(others))
	for _, r := range others {
		var g Given
		for _, p := range res.Problems {
			if p.Key == r.Key {
				g.Problems = append(g.Problems, p)
			}
		}
		if len(g.Problems) == 0 {
			as := res.Assigned[r.Key]
			g.Addrs, g.Pending = c.Usable(r.Key, r.ShareKey, r.Current, as)
			g.Addrs, g.Pending = slices.Clip(g.Addrs), slices.Clip(g.Pending)
		}
		out[r.Key] = g
	}
	return out
}
