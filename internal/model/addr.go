package model

import "net/netip"

// ValidPort reports whether p is a port HAProxy and nftables can use:
// 1 to 65535. Kubernetes fields are int32: a value outside this range is
// refused where objects enter the model, never converted (70000 would
// wrap to 4464).
func ValidPort(p int32) bool { return p >= 1 && p <= 65535 }

var broadcast4 = netip.AddrFrom4([4]byte{255, 255, 255, 255})

// ServerAddrProblem says why a cannot be a server's address (a node's
// InternalIP, an endpoint): "" when it can. The unspecified address would
// make HAProxy or the kernel connect to the load balancer itself, a
// multicast or broadcast address to many hosts, and a zone is local to
// the host that wrote it.
func ServerAddrProblem(a netip.Addr) string {
	a = a.Unmap()
	switch {
	case !a.IsValid():
		return "not an IP address"
	case a.Zone() != "":
		return "an IPv6 zone is local to one host"
	case a.IsUnspecified():
		return "the unspecified address"
	case a.IsMulticast():
		return "a multicast address"
	case a == broadcast4:
		return "the broadcast address"
	}
	return ""
}

// ListenAddrProblem says why a cannot be a Service's own address (one
// handed out by an AddressPool): "" when it can. Besides what no server
// may be, a link-local address is valid on one link only; the unspecified
// address would bind every address and collide with every other Service.
func ListenAddrProblem(a netip.Addr) string {
	if p := ServerAddrProblem(a); p != "" {
		return p
	}
	if a.Unmap().IsLinkLocalUnicast() {
		return "a link-local address"
	}
	return ""
}
