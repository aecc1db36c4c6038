package pools

import (
	"net/netip"
	"slices"

	netv1 "k8s.io/api/networking/v1"
)

// IngressClassKey is the key of an IngressClass's request: apart from
// Services' and Gateways', and readable in a Problem's message.
func IngressClassKey(name string) string { return "IngressClass " + name }

// IngressClassRequest reads what an IngressClass of ours asks of the
// pools: one IPv4 address of the pool its address-pool annotation names
// (every Ingress of the class is served there), shared as its
// allow-shared-ip annotation says, on ports (the Ingresses' TCP ports).
// current are the addresses it had (the claims, the last pass's, what
// its Ingresses' status lists), kept while valid. ok false: the class
// names no pool, and asks for nothing. An IngressClass is cluster-scoped:
// a pool restricted to namespaces (or by namespaceSelector) does not
// serve it; a serviceSelector is matched against the class's labels.
func IngressClassRequest(ic *netv1.IngressClass, ports []uint16, current []netip.Addr) (r Request, ok bool) {
	pool := ic.Annotations[PoolAnnotation]
	if pool == "" {
		return Request{}, false
	}
	r = Request{Key: IngressClassKey(ic.Name), Labels: ic.Labels, Created: ic.CreationTimestamp.Time,
		Pool: pool, ShareKey: ic.Annotations[SharedIPAnnotation], Families: []int{4}}
	for _, p := range ports {
		if pt := (Port{"TCP", int32(p)}); !slices.Contains(r.Ports, pt) {
			r.Ports = append(r.Ports, pt)
		}
	}
	for _, a := range current {
		if a = a.Unmap(); a.Is4() && !slices.Contains(r.Current, a) {
			r.Current = append(r.Current, a)
		}
	}
	return r, true // no Ours: an address no pool holds any more is not kept
}
