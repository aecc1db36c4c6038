package desired

import (
	"net/netip"

	corev1 "k8s.io/api/core/v1"

	"github.com/haproxy-k8s-sync/haproxy-k8s-sync/internal/model"
)

// Dual-stack: a Service with both IP families in spec.ipFamilies whose
// listen addresses are of both families (its own addresses from the
// pools, or --bind-address) gets a frontend and a backend per family and
// port: IPv4 clients reach IPv4 servers, IPv6 clients IPv6 servers (the
// nodes' InternalIPs of that family, or the Pod IPs of that family). The
// first family keeps the names a single-stack Service has
// (fe_NS_NAME_PORT); the second's carry a suffix, "_v6" or "_v4" (names
// of Kubernetes objects have no '_', so no Service's names can clash).
// Every other Service has one frontend per port, with the servers of its
// first family (any, when it names none).

// family is the IP family a frontend serves, and so its servers'.
type family uint8

const (
	famAny family = iota // the Service names no family: nodes' preferred address, any Pod IP
	famV4
	famV6
)

// famGroup is one frontend of a Service port: its family, its binds and
// the suffix of its names.
type famGroup struct {
	fam    family
	binds  []model.Bind
	suffix string
}

// firstFamily is the family of svc's servers when it is not split.
func firstFamily(svc *corev1.Service) family {
	switch {
	case len(svc.Spec.IPFamilies) == 0:
		return famAny
	case svc.Spec.IPFamilies[0] == corev1.IPv6Protocol:
		return famV6
	}
	return famV4
}

// splits reports whether svc, listening on binds, has a frontend per
// family: it names both families, and binds holds an address of each.
func splits(svc *corev1.Service, binds []model.Bind) bool {
	if len(svc.Spec.IPFamilies) < 2 || svc.Spec.IPFamilies[0] == svc.Spec.IPFamilies[1] {
		return false
	}
	var v4, v6 bool
	for _, b := range binds {
		if b.Addr.IsValid() {
			v4, v6 = v4 || b.Addr.Is4(), v6 || !b.Addr.Is4()
		}
	}
	return v4 && v6
}

// groupsOf are the frontends of one port of svc listening on binds: one,
// or one per family (splits), the first family first. Its count is the
// same for every port of a Service (the binds differ by port only).
func groupsOf(svc *corev1.Service, binds []model.Bind) []famGroup {
	if !splits(svc, binds) {
		return []famGroup{{fam: firstFamily(svc), binds: binds}}
	}
	first, second := famV4, famV6
	if svc.Spec.IPFamilies[0] == corev1.IPv6Protocol {
		first, second = famV6, famV4
	}
	out := []famGroup{{fam: first}, {fam: second, suffix: "_v6"}}
	if second == famV4 {
		out[1].suffix = "_v4"
	}
	for _, b := range binds {
		if b.Addr.IsValid() && (b.Addr.Is4() == (first == famV4)) {
			out[0].binds = append(out[0].binds, b)
		} else {
			out[1].binds = append(out[1].binds, b)
		}
	}
	return out
}

// ofFamily reports whether an endpoint address serves a frontend of fam.
func ofFamily(fam family, a netip.Addr) bool {
	switch fam {
	case famV4:
		return a.Is4()
	case famV6:
		return !a.Is4()
	}
	return true
}

// nodeAddr is the address of node n that serves a frontend of fam
// (invalid: the node has none).
func nodeAddr(n nodeInfo, fam family) netip.Addr {
	if fam == famV6 {
		return n.addr6
	}
	return n.addr
}
