package nft

import (
	"encoding/binary"
	"net/netip"

	"github.com/google/nftables"
	"github.com/google/nftables/binaryutil"
	"github.com/google/nftables/expr"
	"golang.org/x/sys/unix"

	"github.com/haproxy-k8s-sync/haproxy-k8s-sync/internal/model"
)

// The netlink form of what Render writes: the same objects and rules,
// expression by expression (as `nft --debug=netlink` shows them).

// 32-bit registers: a 16-byte value (an IPv6 address) takes 4 of them.
const (
	reg1     = unix.NFT_REG_1    // 16-byte register 1 (= 32-bit 8..11)
	reg2     = unix.NFT_REG_2    // 16-byte register 2 (= 32-bit 12..15)
	reg1b    = unix.NFT_REG32_01 // the 32-bit register after the first
	ipsDNAT  = 0x20              // IPS_DST_NAT of the conntrack status
	rtnLocal = unix.RTN_LOCAL
)

var table = &nftables.Table{Family: nftables.TableFamilyINet, Name: Table}

func baseChains() (pre, post *nftables.Chain) {
	accept := nftables.ChainPolicyAccept
	pre = &nftables.Chain{Name: chainPre, Table: table, Type: nftables.ChainTypeNAT,
		Hooknum: nftables.ChainHookPrerouting, Priority: nftables.ChainPriorityNATDest, Policy: &accept}
	post = &nftables.Chain{Name: chainPost, Table: table, Type: nftables.ChainTypeNAT,
		Hooknum: nftables.ChainHookPostrouting, Priority: nftables.ChainPriorityNATSource, Policy: &accept}
	return pre, post
}

func portsSet() *nftables.Set {
	return &nftables.Set{Table: table, Name: setPorts, KeyType: nftables.TypeInetService}
}

func dispatchSet(name string) *nftables.Set {
	s := &nftables.Set{Table: table, Name: name, IsMap: true, DataType: nftables.TypeVerdict}
	switch name {
	case mapAddr4:
		s.KeyType, s.Concatenation = nftables.MustConcatSetType(nftables.TypeIPAddr, nftables.TypeInetService), true
	case mapAddr6:
		s.KeyType, s.Concatenation = nftables.MustConcatSetType(nftables.TypeIP6Addr, nftables.TypeInetService), true
	default:
		s.KeyType = nftables.TypeInetService
	}
	return s
}

// serverMap is a port's map of servers of one family: index : addr . port.
// The index is a mark-sized integer (what numgen and jhash produce).
func serverMap(svc string, v6 bool) *nftables.Set {
	s := &nftables.Set{Table: table, Name: svc + suffixV4, IsMap: true,
		KeyType: nftables.TypeMark, KeyByteOrder: binaryutil.NativeEndian, DataType: nftables.MustConcatSetType(nftables.TypeIPAddr, nftables.TypeInetService)}
	if v6 {
		s.Name, s.DataType = svc+suffixV6, nftables.MustConcatSetType(nftables.TypeIP6Addr, nftables.TypeInetService)
	}
	return s
}

// Element encodings. Each part of a concatenation is padded to 4 bytes.
func portKey(p uint16) []byte { return binaryutil.BigEndian.PutUint16(p) }

func addrPort(a netip.Addr, p uint16) []byte {
	b := append([]byte(nil), a.AsSlice()...)
	return append(b, byte(p>>8), byte(p), 0, 0)
}

func indexKey(i int) []byte { return binaryutil.NativeEndian.PutUint32(uint32(i)) }

func gotoChain(name string) *expr.Verdict { return &expr.Verdict{Kind: expr.VerdictGoto, Chain: name} }

func parseIndexKey(b []byte) (int, bool) {
	if len(b) != 4 {
		return 0, false
	}
	return int(binaryutil.NativeEndian.Uint32(b)), true
}

func parseAddrPort(b []byte) (netip.AddrPort, bool) {
	switch len(b) {
	case 8, 20:
		a, _ := netip.AddrFromSlice(b[:len(b)-4])
		return netip.AddrPortFrom(a, binary.BigEndian.Uint16(b[len(b)-4:])), true
	}
	return netip.AddrPort{}, false
}

// Expression helpers.
func cmpEq(reg uint32, data []byte) *expr.Cmp {
	return &expr.Cmp{Op: expr.CmpOpEq, Register: reg, Data: data}
}

func nfproto(v6 bool) []expr.Any {
	p := byte(unix.NFPROTO_IPV4)
	if v6 {
		p = unix.NFPROTO_IPV6
	}
	return []expr.Any{&expr.Meta{Key: expr.MetaKeyNFPROTO, Register: reg1}, cmpEq(reg1, []byte{p})}
}

func l4udp() []expr.Any {
	return []expr.Any{&expr.Meta{Key: expr.MetaKeyL4PROTO, Register: reg1}, cmpEq(reg1, []byte{unix.IPPROTO_UDP})}
}

func udpDport(reg uint32) *expr.Payload {
	return &expr.Payload{DestRegister: reg, Base: expr.PayloadBaseTransportHeader, Offset: 2, Len: 2}
}

// preRules are the fixed rules of the prerouting chain.
func preRules() [][]expr.Any {
	var out [][]expr.Any
	// ip daddr . udp dport vmap @dispatch4
	out = append(out, concat(l4udp(), nfproto(false), []expr.Any{
		&expr.Payload{DestRegister: reg1, Base: expr.PayloadBaseNetworkHeader, Offset: 16, Len: 4},
		udpDport(reg1b),
		&expr.Lookup{SourceRegister: reg1, SetName: mapAddr4, DestRegister: 0, IsDestRegSet: true},
	}))
	// ip6 daddr . udp dport vmap @dispatch6
	out = append(out, concat(l4udp(), nfproto(true), []expr.Any{
		&expr.Payload{DestRegister: reg1, Base: expr.PayloadBaseNetworkHeader, Offset: 24, Len: 16},
		udpDport(reg2),
		&expr.Lookup{SourceRegister: reg1, SetName: mapAddr6, DestRegister: 0, IsDestRegSet: true},
	}))
	// fib daddr type local udp dport vmap @dispatch
	out = append(out, concat(l4udp(), []expr.Any{
		&expr.Fib{Register: reg1, FlagDADDR: true, ResultADDRTYPE: true},
		cmpEq(reg1, binaryutil.NativeEndian.PutUint32(rtnLocal)),
		udpDport(reg1),
		&expr.Lookup{SourceRegister: reg1, SetName: mapAny, DestRegister: 0, IsDestRegSet: true},
	}))
	return out
}

// postRules send the new flows to a server of a port with timed
// affinity to its record chain (affinity.go), and masquerade the flows of
// our listen ports that were DNATed.
func postRules() [][]expr.Any {
	ours := func() []expr.Any {
		return concat(l4udp(), []expr.Any{
			&expr.Ct{Register: reg1, Key: expr.CtKeySTATUS},
			&expr.Bitwise{SourceRegister: reg1, DestRegister: reg1, Len: 4,
				Mask: binaryutil.NativeEndian.PutUint32(ipsDNAT), Xor: binaryutil.NativeEndian.PutUint32(0)},
			&expr.Cmp{Op: expr.CmpOpNeq, Register: reg1, Data: binaryutil.NativeEndian.PutUint32(0)},
			&expr.Ct{Register: reg1, Key: expr.CtKeyPROTODST, Direction: 0},
			&expr.Lookup{SourceRegister: reg1, SetName: setPorts},
		})
	}
	var out [][]expr.Any
	for _, v6 := range []bool{false, true} {
		port := uint32(reg1b)
		if v6 {
			port = reg2
		}
		out = append(out, concat(ours(), nfproto(v6), []expr.Any{
			daddrPayload(v6, reg1),
			udpDport(port),
			&expr.Lookup{SourceRegister: reg1, SetName: affinityDispatchSet(v6).Name, DestRegister: 0, IsDestRegSet: true},
		}))
	}
	return append(out, append(ours(), &expr.Masq{}))
}

// serviceRuleExprs are the rules of a port's chain (serviceRules in text).
func serviceRuleExprs(s Service) [][]expr.Any {
	var out [][]expr.Any
	if s.Restricted {
		out = srcRuleExprs(s)
	}
	out = append(out, stickyRuleExprs(s)...)
	for _, v6 := range []bool{false, true} {
		n, m, fam := len(s.V4), s.Name+suffixV4, uint32(unix.NFPROTO_IPV4)
		saddr := &expr.Payload{DestRegister: reg2, Base: expr.PayloadBaseNetworkHeader, Offset: 12, Len: 4}
		proto := uint32(reg1b)
		if v6 {
			n, m, fam = len(s.V6), s.Name+suffixV6, unix.NFPROTO_IPV6
			saddr = &expr.Payload{DestRegister: reg2, Base: expr.PayloadBaseNetworkHeader, Offset: 8, Len: 16}
			proto = reg2
		}
		if n == 0 {
			continue
		}
		r := concat(nfproto(v6), l4udp())
		if s.Balance == model.BalanceSource {
			r = append(r, saddr, &expr.Hash{SourceRegister: reg2, DestRegister: reg1, Length: saddr.Len,
				Modulus: uint32(n), Type: expr.HashTypeJenkins})
		} else {
			r = append(r, &expr.Numgen{Register: reg1, Modulus: uint32(n), Type: unix.NFT_NG_INCREMENTAL})
		}
		r = append(r,
			&expr.Lookup{SourceRegister: reg1, SetName: m, DestRegister: reg1, IsDestRegSet: true},
			&expr.NAT{Type: expr.NATTypeDestNAT, Family: fam, RegAddrMin: reg1, RegAddrMax: reg1,
				RegProtoMin: proto, RegProtoMax: proto, Specified: true})
		out = append(out, r)
	}
	return append(out, []expr.Any{&expr.Verdict{Kind: expr.VerdictDrop}})
}

func concat(parts ...[]expr.Any) []expr.Any {
	var out []expr.Any
	for _, p := range parts {
		out = append(out, p...)
	}
	return out
}
