package tproxy

import (
	"net/netip"

	"github.com/google/nftables"
	"github.com/google/nftables/binaryutil"
	"github.com/google/nftables/expr"
	"golang.org/x/sys/unix"
)

// The netlink form of what Render writes, expression by expression (as
// `nft --debug=netlink` shows them).

var table = &nftables.Table{Family: nftables.TableFamilyINet, Name: Table}

func chains() (pre, out *nftables.Chain) {
	accept := nftables.ChainPolicyAccept
	pre = &nftables.Chain{Name: chainPre, Table: table, Type: nftables.ChainTypeFilter,
		Hooknum: nftables.ChainHookPrerouting, Priority: nftables.ChainPriorityMangle, Policy: &accept}
	out = &nftables.Chain{Name: chainOut, Table: table, Type: nftables.ChainTypeRoute,
		Hooknum: nftables.ChainHookOutput, Priority: nftables.ChainPriorityMangle, Policy: &accept}
	return pre, out
}

func listenSet(v6 bool) *nftables.Set { return elementSet(v6, kindTCP) }

// elementSet is the set of one listener's elements (setKind,
// httpsets.go), of one family.
func elementSet(v6 bool, k setKind) *nftables.Set {
	name := setName(v6, k)
	if v6 {
		return &nftables.Set{Table: table, Name: name, Concatenation: true,
			KeyType: nftables.MustConcatSetType(nftables.TypeIP6Addr, nftables.TypeInetService)}
	}
	return &nftables.Set{Table: table, Name: name, Concatenation: true,
		KeyType: nftables.MustConcatSetType(nftables.TypeIPAddr, nftables.TypeInetService)}
}

// key is an element's key: the address, then the port padded to 4 bytes.
func key(ap netip.AddrPort) []byte {
	b := append([]byte(nil), ap.Addr().AsSlice()...)
	return append(b, byte(ap.Port()>>8), byte(ap.Port()), 0, 0)
}

func parseKey(b []byte) (netip.AddrPort, bool) {
	if len(b) != 8 && len(b) != 20 {
		return netip.AddrPort{}, false
	}
	a, _ := netip.AddrFromSlice(b[:len(b)-4])
	return netip.AddrPortFrom(a, uint16(b[len(b)-4])<<8|uint16(b[len(b)-3])), true
}

// match is `meta l4proto tcp ip[6] daddr . tcp dport @SET` (listen4|6,
// or http4|6, https4|6 for the HTTP listeners).
func match(v6 bool, k setKind) []expr.Any {
	proto, daddr, dport := byte(unix.NFPROTO_IPV4), &expr.Payload{DestRegister: unix.NFT_REG_1, Base: expr.PayloadBaseNetworkHeader, Offset: 16, Len: 4}, uint32(unix.NFT_REG32_01)
	if v6 {
		proto, daddr, dport = unix.NFPROTO_IPV6, &expr.Payload{DestRegister: unix.NFT_REG_1, Base: expr.PayloadBaseNetworkHeader, Offset: 24, Len: 16}, unix.NFT_REG_2
	}
	return []expr.Any{
		&expr.Meta{Key: expr.MetaKeyNFPROTO, Register: unix.NFT_REG_1},
		&expr.Cmp{Op: expr.CmpOpEq, Register: unix.NFT_REG_1, Data: []byte{proto}},
		&expr.Meta{Key: expr.MetaKeyL4PROTO, Register: unix.NFT_REG_1},
		&expr.Cmp{Op: expr.CmpOpEq, Register: unix.NFT_REG_1, Data: []byte{unix.IPPROTO_TCP}},
		daddr,
		&expr.Payload{DestRegister: dport, Base: expr.PayloadBaseTransportHeader, Offset: 2, Len: 2},
		&expr.Lookup{SourceRegister: unix.NFT_REG_1, SetName: setName(v6, k)},
	}
}

func setMark(mark uint32) []expr.Any {
	return []expr.Any{
		&expr.Immediate{Register: unix.NFT_REG_1, Data: binaryutil.NativeEndian.PutUint32(mark)},
		&expr.Meta{Key: expr.MetaKeyMARK, SourceRegister: true, Register: unix.NFT_REG_1},
	}
}

// preRule gives the listener's socket the packets to the set's elements
// (an established connection's own socket first: the kernel's tproxy
// looks it up before the listener) and marks them for the local route.
func preRule(v6 bool, k setKind, port uint16, mark uint32) []expr.Any {
	fam := byte(unix.NFPROTO_IPV4)
	if v6 {
		fam = unix.NFPROTO_IPV6
	}
	r := match(v6, k)
	r = append(r,
		&expr.Immediate{Register: unix.NFT_REG_1, Data: binaryutil.BigEndian.PutUint16(port)},
		&expr.TProxy{Family: fam, TableFamily: byte(nftables.TableFamilyINet), RegPort: unix.NFT_REG_1})
	r = append(r, setMark(mark)...)
	return append(r, &expr.Verdict{Kind: expr.VerdictAccept})
}

// outRule marks the host's own packets to the set's elements: the route
// chain routes them again, through the mark's table, to lo, where
// prerouting meets them.
func outRule(v6 bool, k setKind, mark uint32) []expr.Any {
	return append(match(v6, k), setMark(mark)...)
}
