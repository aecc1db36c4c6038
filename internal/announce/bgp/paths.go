package bgp

import (
	"net/netip"
	"slices"

	"github.com/osrg/gobgp/v4/pkg/apiutil"
	"github.com/osrg/gobgp/v4/pkg/packet/bgp"

	"github.com/haproxy-k8s-sync/haproxy-k8s-sync/internal/announce"
)

// routes is what a host announces for a Want: every address as a host
// route while it is healthy, nothing when it is not.
func routes(w announce.Want) []netip.Addr {
	if !w.Healthy {
		return nil
	}
	return w.Normal().Addrs
}

// diff is what changes from the routes announced (sorted) to the routes
// wanted (sorted): the ones to add and the ones to withdraw.
func diff(had, want []netip.Addr) (add, withdraw []netip.Addr) {
	for _, a := range want {
		if _, found := slices.BinarySearchFunc(had, a, netip.Addr.Compare); !found {
			add = append(add, a)
		}
	}
	for _, a := range had {
		if _, found := slices.BinarySearchFunc(want, a, netip.Addr.Compare); !found {
			withdraw = append(withdraw, a)
		}
	}
	return add, withdraw
}

// path is a's host route (/32 or /128), originated here (origin IGP),
// its next hop left unspecified so that each session's own local
// address is the next hop the router learns (the routers on IPv4
// sessions learn the IPv4 routes, those on IPv6 sessions the IPv6 ones),
// with med.
func path(a netip.Addr, med uint32, withdraw bool) *apiutil.Path {
	a = a.Unmap()
	nlri, err := bgp.NewIPAddrPrefix(netip.PrefixFrom(a, a.BitLen()))
	if err != nil { // a valid address always makes a prefix
		panic(err)
	}
	attrs := []bgp.PathAttributeInterface{bgp.NewPathAttributeOrigin(bgp.BGP_ORIGIN_ATTR_TYPE_IGP), bgp.NewPathAttributeMultiExitDisc(med)}
	family := bgp.RF_IPv4_UC
	if a.Is4() {
		nh, _ := bgp.NewPathAttributeNextHop(netip.IPv4Unspecified())
		attrs = append(attrs, nh)
	} else {
		family = bgp.RF_IPv6_UC
		mp, _ := bgp.NewPathAttributeMpReachNLRI(family, []bgp.PathNLRI{{NLRI: nlri}}, netip.IPv6Unspecified())
		attrs = append(attrs, mp)
	}
	return &apiutil.Path{Family: family, Nlri: nlri, Attrs: attrs, Withdrawal: withdraw}
}
