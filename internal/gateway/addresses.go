package gateway

import (
	"net/netip"
	"slices"
	"strings"

	corev1 "k8s.io/api/core/v1"
	gwv1 "sigs.k8s.io/gateway-api/apis/v1"

	"github.com/haproxy-k8s-sync/haproxy-k8s-sync/internal/pools"
)

// gwAddrs is a Gateway's share of the AddressPools: where it binds, or
// why it cannot be served (the reason of Programmed=False).
type gwAddrs struct {
	addrs    []netip.Addr
	why, msg string // "AddressNotUsable", "AddressNotAssigned"; "" when served
}

// allocate hands the Gateways (ours, accepted class) their addresses
// from the pools (opts.Pools), together with what the LoadBalancer
// Services hold: each Service's status addresses and those it asks for
// are a reservation (pools.Reservation), so a Gateway never gets a Service's address
// unless both carry the same allow-shared-ip key and no port clashes. The
// Services mode (--address-pools) reserves the Gateways' status addresses
// in the same way, and both order requests alike (pools.SortRequests):
// the same objects give the same allocation in either controller.
// A Gateway's own status addresses keep it its addresses across restarts.
//
// With claims (non-nil: the address claims of internal/claims), a claimed
// address goes only to its holder, and a Gateway whose addresses are not
// all claimed for it yet (nor listed in its status) waits: not served,
// Programmed=False (AddressNotAssigned), its addresses in given (for the
// claims and the next pass's prev) but not in addrs.
//
// opts.Others are allocated among them (others.go: what each got).
func allocate(gws []*gwv1.Gateway, in Input, opts Options) (map[Key]gwAddrs, map[Key][]netip.Addr, map[string]Given) {
	ps, prev, claims := opts.Pools, opts.Previous, opts.Claims
	nsLabels := namespaceLabels(in.Namespaces)
	var reqs []pools.Request
	for _, s := range in.Services {
		if s.Spec.Type != corev1.ServiceTypeLoadBalancer {
			continue
		}
		r, _ := pools.RequestFor(s, nsLabels[s.Namespace])
		reqs = append(reqs, pools.Reservation(r)) // the Services mode's to serve
	}
	out := make(map[Key]gwAddrs, len(gws))
	keys := map[string]Key{}
	published, share := map[string][]netip.Addr{}, map[string]string{}
	lsets := listenerSetsByParent(in.ListenerSets)
	for _, g := range gws {
		r, bad := pools.GatewayRequest(g, nsLabels[g.Namespace])
		k := Key{g.Namespace, g.Name}
		r.Ports = listenerSetPorts(g, lsets[k], nsLabels, r.Ports) // listenerset.go
		if len(bad) > 0 {
			out[k] = gwAddrs{why: string(gwv1.GatewayReasonAddressNotUsable), msg: "spec.addresses: not an IP address: " + strings.Join(bad, ", ")}
			continue
		}
		published[r.Key], share[r.Key] = r.Current, r.ShareKey
		for _, a := range prev[k] {
			if !slices.Contains(r.Current, a) {
				r.Current = append(slices.Clip(r.Current), a)
			}
		}
		keys[r.Key] = k
		reqs = append(reqs, r)
	}
	reqs = append(reqs, opts.Others...)
	pools.SortRequests(reqs)
	res := pools.AllocateClaimed(ps, reqs, claims)
	others := othersGiven(opts.Others, res, claims)
	res.SplitClaimed(claims, published, share)
	given := make(map[Key][]netip.Addr, len(keys))
	probs := map[Key][]pools.Problem{}
	for _, p := range res.Problems {
		if k, ok := keys[p.Key]; ok {
			probs[k] = append(probs[k], p)
		}
	}
	for pk, k := range keys {
		var a gwAddrs
		for _, p := range probs[k] {
			switch p.Reason {
			case pools.ReasonExhausted, pools.ReasonNoPool:
				if a.why == "" {
					a.why = string(gwv1.GatewayReasonAddressNotAssigned)
				}
				p.Message = strings.ReplaceAll(p.Message, "Service", "Gateway")
			default: // asked for by value: not in a pool, taken, wrong family
				a.why = string(gwv1.GatewayReasonAddressNotUsable)
			}
			if a.msg != "" {
				a.msg += "; "
			}
			a.msg += p.Message
		}
		if a.why == "" {
			if g := slices.Concat(res.Assigned[pk], res.Pending[pk]); len(g) > 0 {
				slices.SortFunc(g, func(a, b netip.Addr) int { return a.Compare(b) })
				given[k] = g
			}
			a.addrs = res.Assigned[pk]
			if p := res.Pending[pk]; len(p) > 0 {
				a.addrs, a.why = nil, string(gwv1.GatewayReasonAddressNotAssigned)
				a.msg = "claiming " + addrList(p) + " for this Gateway (no other object may have it)"
			}
		}
		out[k] = a
	}
	return out, given, others
}

func addrList(as []netip.Addr) string {
	s := make([]string, len(as))
	for i, a := range as {
		s[i] = a.String()
	}
	return strings.Join(s, ", ")
}
