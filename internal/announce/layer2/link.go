package layer2

import (
	"errors"
	"fmt"
	"net"
	"net/netip"
	"time"

	"github.com/mdlayher/arp"
	"github.com/mdlayher/ethernet"
	"github.com/mdlayher/ndp"
	"github.com/vishvananda/netlink"
	"github.com/vishvananda/netns"
	"golang.org/x/net/ipv6"
	"golang.org/x/sys/unix"

	"github.com/haproxy-k8s-sync/haproxy-k8s-sync/internal/netnsrun"
)

// ErrNoInterface: the interface named does not exist (in the announcer's
// network namespace).
var ErrNoInterface = errors.New("layer2: no such interface")

// link is the interface the addresses go on: the addresses themselves
// (netlink, each with a lifetime the announcer keeps renewing, so that
// the address of an agent that died lapses by itself) and the
// announcements that move the neighbours' caches to it (gratuitous ARP,
// unsolicited neighbour advertisements). Everything is opened in the
// network namespace the link was made in, whichever thread uses it.
type link struct {
	ns     netns.NsHandle
	own    bool // no CAP_SYS_ADMIN: every thread is in ns, no setns (nor allowed)
	nl     *netlink.Handle
	nlLink netlink.Link
	ifi    *net.Interface
	arp    *arp.Client
	ndp    *ndp.Conn
}

// openLink opens name in the calling thread's network namespace.
func openLink(name string) (*link, error) {
	ns, err := netns.Get()
	if err != nil {
		return nil, err
	}
	l := &link{ns: ns}
	// Entering the namespace needs CAP_SYS_ADMIN, even one's own. Without
	// it the process cannot have moved a thread elsewhere either: every
	// thread is in the namespace, and nothing needs entering.
	if l.own = !hasSysAdmin(); l.own {
		l.nl, err = netlink.NewHandle()
	} else {
		l.nl, err = netlink.NewHandleAt(ns)
	}
	if err != nil {
		ns.Close()
		return nil, err
	}
	if l.nlLink, err = l.nl.LinkByName(name); err != nil {
		l.close()
		return nil, fmt.Errorf("%w: %s: %v", ErrNoInterface, name, err)
	}
	if l.ifi, err = net.InterfaceByIndex(l.nlLink.Attrs().Index); err != nil {
		l.close()
		return nil, fmt.Errorf("%w: %s: %v", ErrNoInterface, name, err)
	}
	return l, nil
}

// hasSysAdmin is whether the calling thread may enter namespaces.
func hasSysAdmin() bool {
	hdr := unix.CapUserHeader{Version: unix.LINUX_CAPABILITY_VERSION_3}
	var data [2]unix.CapUserData
	if err := unix.Capget(&hdr, &data[0]); err != nil {
		return false
	}
	return data[unix.CAP_SYS_ADMIN/32].Effective&(1<<(unix.CAP_SYS_ADMIN%32)) != 0
}

// do runs fn in the link's namespace.
func (l *link) do(fn func() error) error {
	if l.own {
		return fn()
	}
	return netnsrun.Do(l.ns, fn)
}

func (l *link) close() {
	if l.arp != nil {
		l.arp.Close()
	}
	if l.ndp != nil {
		l.ndp.Close()
	}
	l.nl.Close()
	l.ns.Close()
}

func hostPrefix(a netip.Addr) *net.IPNet {
	return &net.IPNet{IP: a.AsSlice(), Mask: net.CIDRMask(a.BitLen(), a.BitLen())}
}

// hold puts a on the interface, or renews its lifetime (whole seconds,
// at least one).
func (l *link) hold(a netip.Addr, lifetime time.Duration) error {
	secs := max(int(lifetime/time.Second), 1)
	addr := &netlink.Addr{IPNet: hostPrefix(a), ValidLft: secs, PreferedLft: secs}
	if a.Is6() {
		// usable at once: the owner is the only one to put it on the
		// segment, and duplicate detection would hold it back a second
		addr.Flags = unix.IFA_F_NODAD
	}
	return l.nl.AddrReplace(l.nlLink, addr)
}

// drop takes a off the interface (gone already is no error).
func (l *link) drop(a netip.Addr) error {
	err := l.nl.AddrDel(l.nlLink, &netlink.Addr{IPNet: hostPrefix(a)})
	if errors.Is(err, unix.EADDRNOTAVAIL) || errors.Is(err, unix.ENOENT) {
		return nil
	}
	return err
}

// carrier is whether the interface is up with a carrier (an error
// reading it counts as none).
func (l *link) carrier() bool {
	k, err := l.nl.LinkByIndex(l.ifi.Index)
	return err == nil && k.Attrs().RawFlags&unix.IFF_UP != 0 && k.Attrs().RawFlags&unix.IFF_LOWER_UP != 0
}

// present is the addresses on the interface now, each with whether it
// is permanent (no lifetime: the operator's, never one of ours).
func (l *link) present() (map[netip.Addr]bool, error) {
	list, err := l.nl.AddrList(l.nlLink, netlink.FAMILY_ALL)
	if err != nil {
		return nil, err
	}
	out := map[netip.Addr]bool{}
	for _, x := range list {
		if a, ok := netip.AddrFromSlice(x.IP); ok {
			out[a.Unmap()] = x.Flags&unix.IFA_F_PERMANENT != 0
		}
	}
	return out, nil
}

// announce tells the segment that a is here: a gratuitous ARP (request
// and reply, as devices differ in which they take) for IPv4, an
// unsolicited neighbour advertisement with the override flag to all
// nodes for IPv6.
func (l *link) announce(a netip.Addr) error {
	if a.Is4() {
		if l.arp == nil {
			if err := l.do(func() (err error) { l.arp, err = arp.Dial(l.ifi); return err }); err != nil {
				return fmt.Errorf("gratuitous ARP on %s: %w", l.ifi.Name, err)
			}
		}
		for _, op := range []arp.Operation{arp.OperationRequest, arp.OperationReply} {
			p, err := arp.NewPacket(op, l.ifi.HardwareAddr, a, ethernet.Broadcast, a)
			if err != nil {
				return err
			}
			if err := l.arp.WriteTo(p, ethernet.Broadcast); err != nil {
				return fmt.Errorf("gratuitous ARP on %s: %w", l.ifi.Name, err)
			}
		}
		return nil
	}
	if l.ndp == nil {
		if err := l.do(func() (err error) {
			l.ndp, _, err = ndp.Listen(l.ifi, ndp.Unspecified)
			return err
		}); err != nil {
			return fmt.Errorf("neighbour advertisement on %s: %w", l.ifi.Name, err)
		}
	}
	na := &ndp.NeighborAdvertisement{Override: true, TargetAddress: a,
		Options: []ndp.Option{&ndp.LinkLayerAddress{Direction: ndp.Target, Addr: l.ifi.HardwareAddr}}}
	// from the address itself: always valid on the link, where a
	// link-local one may still be in duplicate detection
	cm := &ipv6.ControlMessage{HopLimit: ndp.HopLimit, Src: a.AsSlice(), IfIndex: l.ifi.Index}
	// in the namespace: the destination's zone is the interface's name,
	// looked up on the calling thread
	if err := l.do(func() error { return l.ndp.WriteTo(na, cm, netip.IPv6LinkLocalAllNodes()) }); err != nil {
		return fmt.Errorf("neighbour advertisement on %s: %w", l.ifi.Name, err)
	}
	return nil
}
