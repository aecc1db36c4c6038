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
func allocate(gws []*gwv1.Gateway, in Input, ps []pools.Pool, prev map[Key][]netip.Addr) map[Key]gwAddrs {
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
	for _, g := range gws {
		r, bad := pools.GatewayRequest(g, nsLabels[g.Namespace])
		k := Key{g.Namespace, g.Name}
		if len(bad) > 0 {
			out[k] = gwAddrs{why: string(gwv1.GatewayReasonAddressNotUsable), msg: "spec.addresses: not an IP address: " + strings.Join(bad, ", ")}
			continue
		}
		for _, a := range prev[k] {
			if !slices.Contains(r.Current, a) {
				r.Current = append(r.Current, a)
			}
		}
		keys[r.Key] = k
		reqs = append(reqs, r)
	}
	pools.SortRequests(reqs)
	res := pools.Allocate(ps, reqs)
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
			a.addrs = res.Assigned[pk]
		}
		out[k] = a
	}
	return out
}
