package nft

import (
	"net/netip"
	"slices"

	"github.com/vishvananda/netlink"
	"github.com/vishvananda/netns"
	"golang.org/x/sys/unix"
)

// gone is one server a port no longer sends anything to: its flows are
// deleted from conntrack so that the client's next datagram is a new
// flow, balanced to a live server.
type gone struct {
	port   uint16 // the listen port (the flow's original destination port)
	server netip.AddrPort
}

// flowFilter matches UDP flows whose original destination port is ours
// and whose reply comes from a gone server.
type flowFilter map[gone]bool

func (f flowFilter) MatchConntrackFlow(fl *netlink.ConntrackFlow) bool {
	if fl.Forward.Protocol != unix.IPPROTO_UDP {
		return false
	}
	a, ok := netip.AddrFromSlice(fl.Reverse.SrcIP)
	if !ok {
		return false
	}
	return f[gone{fl.Forward.DstPort, netip.AddrPortFrom(a.Unmap(), fl.Reverse.SrcPort)}]
}

// deleteFlows removes the conntrack entries of the gone servers, in the
// namespace; it returns how many it removed.
func (n nsHandle) deleteFlows(g []gone) (uint, error) {
	if len(g) == 0 {
		return 0, nil
	}
	f := flowFilter{}
	v4, v6 := false, false
	for _, x := range g {
		f[x] = true
		v4 = v4 || x.server.Addr().Is4()
		v6 = v6 || !x.server.Addr().Is4()
	}
	return n.deleteMatching(f, v4, v6)
}

// outsiders matches UDP flows to a restricted port from a source its
// ranges no longer allow.
type outsiders []Service

func (o outsiders) MatchConntrackFlow(fl *netlink.ConntrackFlow) bool {
	if fl.Forward.Protocol != unix.IPPROTO_UDP {
		return false
	}
	src, ok := netip.AddrFromSlice(fl.Forward.SrcIP)
	dst, ok2 := netip.AddrFromSlice(fl.Forward.DstIP)
	if !ok || !ok2 {
		return false
	}
	src, dst = src.Unmap(), dst.Unmap()
	for _, s := range o {
		if s.Port != fl.Forward.DstPort || !s.Any && !slices.Contains(s.Addrs, dst) {
			continue
		}
		ranges := s.Src4
		if src.Is6() {
			ranges = s.Src6
		}
		return !allowed(ranges, src)
	}
	return false
}

// deleteOutsiders removes the flows of sources the ranges of these ports
// no longer allow; it returns how many it removed.
func (n nsHandle) deleteOutsiders(s []Service) (uint, error) {
	return n.deleteMatching(outsiders(s), true, true)
}

func (n nsHandle) deleteMatching(f netlink.CustomConntrackFilter, v4, v6 bool) (uint, error) {
	h, err := n.handle()
	if err != nil {
		return 0, err
	}
	defer h.Close()
	var total uint
	for fam, use := range map[netlink.InetFamily]bool{unix.AF_INET: v4, unix.AF_INET6: v6} {
		if !use {
			continue
		}
		c, err := h.ConntrackDeleteFilters(netlink.ConntrackTable, fam, f)
		total += c
		if err != nil {
			return total, err
		}
	}
	return total, nil
}

func (n nsHandle) handle() (*netlink.Handle, error) {
	if n.f == nil {
		return netlink.NewHandle(unix.NETLINK_NETFILTER)
	}
	return netlink.NewHandleAt(netns.NsHandle(n.fd()), unix.NETLINK_NETFILTER)
}
