package pools

import (
	"cmp"
	"net/netip"
	"slices"

	gwv1 "sigs.k8s.io/gateway-api/apis/v1"
)

// GatewayKey is the key of a Gateway's request: apart from Services'
// ("namespace/name"), and readable in a Problem's message.
func GatewayKey(namespace, name string) string { return "Gateway " + namespace + "/" + name }

// GatewayRequest reads what a Gateway asks of the pools: the IPAddress
// values of spec.addresses (every one of them, Exact), or, when it names
// none, one IPv4 address from the pools with autoAssign; the
// address-pool and allow-shared-ip annotations as on a Service; its
// listeners' ports; and the addresses its status lists (Current). The
// namespace's labels and the Gateway's labels are matched by a pool's
// namespaceSelector and serviceSelector. Addresses of another type are
// the caller's to refuse (UnsupportedAddress); a value that is not an
// address is returned in bad, and the request then keeps only what it
// has.
func GatewayRequest(g *gwv1.Gateway, nsLabels map[string]string) (r Request, bad []string) {
	r = Request{
		Key: GatewayKey(g.Namespace, g.Name), Namespace: g.Namespace,
		NamespaceLabels: nsLabels, Labels: g.Labels, Created: g.CreationTimestamp.Time,
		Pool: g.Annotations[PoolAnnotation], ShareKey: g.Annotations[SharedIPAnnotation],
	}
	for _, l := range g.Spec.Listeners {
		proto := "TCP"
		if l.Protocol == gwv1.UDPProtocolType {
			proto = "UDP"
		}
		if p := (Port{proto, l.Port}); !slices.Contains(r.Ports, p) {
			r.Ports = append(r.Ports, p)
		}
	}
	for _, a := range g.Status.Addresses {
		if a.Type != nil && *a.Type != gwv1.IPAddressType {
			continue
		}
		if ip, err := netip.ParseAddr(a.Value); err == nil {
			r.Current = append(r.Current, ip.Unmap())
		}
	}
	// Only the controller of the Gateway's class writes its status: every
	// address there is a proxy's, kept when its pool is gone (keepOrphans).
	r.Ours = r.Current
	for _, a := range g.Spec.Addresses {
		if (a.Type != nil && *a.Type != gwv1.IPAddressType) || a.Value == "" {
			continue
		}
		ip, err := netip.ParseAddr(a.Value)
		if err != nil || ip.Zone() != "" {
			bad = append(bad, a.Value)
			continue
		}
		if ip = ip.Unmap(); !slices.Contains(r.IPs, ip) {
			r.IPs = append(r.IPs, ip)
		}
	}
	switch {
	case len(bad) > 0:
		r.IPs, r.KeepOnly = nil, true
	case len(r.IPs) > 0:
		r.Exact = true
		for _, ip := range r.IPs {
			if f := family(ip); !slices.Contains(r.Families, f) {
				r.Families = append(r.Families, f)
			}
		}
	}
	return r, bad
}

// SortRequests orders requests of Services and Gateways together, as
// every controller sharing the pools must: the oldest first, then by key.
// Each controller then computes the same allocation from the same
// objects; two new objects given one free address at once, each by its
// own controller, are told apart by the address claims (AllocateClaimed:
// the first claimed keeps it, the other never publishes it).
func SortRequests(reqs []Request) {
	slices.SortStableFunc(reqs, func(a, b Request) int {
		if c := a.Created.Compare(b.Created); c != 0 {
			return c
		}
		return cmp.Compare(a.Key, b.Key)
	})
}

// serveExact gives r every address it asks for that lies in a pool
// serving it and is free; each other is a Problem.
func (st *state) serveExact(r *Request) {
	for _, a := range r.IPs {
		if !slices.Contains(st.res.Assigned[r.Key], a) {
			st.claim(r, a, "Gateway")
		}
	}
}

// Reservation is r as seen by the other controller sharing the pools (a
// Service in the gateway mode, a Gateway in the Services mode): it gets
// nothing new there (KeepOnly), but holds, in age order like everyone,
// the addresses its status lists and those it asks for by value, so
// neither controller hands out an address the other's older object has
// or asks for. (Two new objects given the same fresh address at once,
// one by each controller: the address claims decide, AllocateClaimed.)
func Reservation(r Request) Request {
	r.KeepOnly = true
	for _, a := range r.IPs {
		if !slices.Contains(r.Current, a) {
			r.Current = append(r.Current, a)
		}
	}
	return r
}
