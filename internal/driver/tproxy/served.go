package tproxy

import (
	"net/netip"

	"github.com/google/nftables"
	"github.com/google/nftables/binaryutil"
	"github.com/google/nftables/expr"
	"golang.org/x/sys/unix"
)

// A port not served on an address that is served is refused, as it is
// where the address is bound (the per-port frontends): the table keeps
// the addresses of every listener's elements in served4 and served6, and
// after the listeners' rules a TCP packet to one of them that no element
// took is answered with a reset, in prerouting for the clients of other
// hosts and in a filter chain on output for the host's own (where an
// operator tries curl first). Without it the packet met no socket and no
// route (the address is not the host's) and the client waited for its
// connect timeout. An address the host holds itself (fib daddr type
// local) is left to the host: its other ports are its own services'
// (sshd on the node's address), which the kernel serves or refuses.

const (
	setServed4  = "served4" // ipv4_addr
	setServed6  = "served6" // ipv6_addr
	chainRefuse = "refuse"  // filter output, priority filter: the host's own clients
)

// servedSet is the set of the served addresses of one family.
func servedSet(v6 bool) *nftables.Set {
	if v6 {
		return &nftables.Set{Table: table, Name: setServed6, KeyType: nftables.TypeIP6Addr}
	}
	return &nftables.Set{Table: table, Name: setServed4, KeyType: nftables.TypeIPAddr}
}

func refuseChain() *nftables.Chain {
	accept := nftables.ChainPolicyAccept
	return &nftables.Chain{Name: chainRefuse, Table: table, Type: nftables.ChainTypeFilter,
		Hooknum: nftables.ChainHookOutput, Priority: nftables.ChainPriorityFilter, Policy: &accept}
}

// refuseRule is `meta l4proto tcp ip[6] daddr @served4|6 fib daddr type
// != local reject with tcp reset`, after the listeners' rules (whose
// accept ends a served packet's way through prerouting); on output
// (mark, not 0) it first skips the packets the route chain marked (the
// elements', rerouted to the listener).
func refuseRule(v6 bool, mark uint32) []expr.Any {
	var r []expr.Any
	if mark != 0 {
		r = append(r,
			&expr.Meta{Key: expr.MetaKeyMARK, Register: unix.NFT_REG_1},
			&expr.Cmp{Op: expr.CmpOpNeq, Register: unix.NFT_REG_1, Data: binaryutil.NativeEndian.PutUint32(mark)})
	}
	proto, daddr, set := byte(unix.NFPROTO_IPV4), &expr.Payload{DestRegister: unix.NFT_REG_1, Base: expr.PayloadBaseNetworkHeader, Offset: 16, Len: 4}, setServed4
	if v6 {
		proto, daddr, set = unix.NFPROTO_IPV6, &expr.Payload{DestRegister: unix.NFT_REG_1, Base: expr.PayloadBaseNetworkHeader, Offset: 24, Len: 16}, setServed6
	}
	return append(r,
		&expr.Meta{Key: expr.MetaKeyNFPROTO, Register: unix.NFT_REG_1},
		&expr.Cmp{Op: expr.CmpOpEq, Register: unix.NFT_REG_1, Data: []byte{proto}},
		&expr.Meta{Key: expr.MetaKeyL4PROTO, Register: unix.NFT_REG_1},
		&expr.Cmp{Op: expr.CmpOpEq, Register: unix.NFT_REG_1, Data: []byte{unix.IPPROTO_TCP}},
		daddr,
		&expr.Lookup{SourceRegister: unix.NFT_REG_1, SetName: set},
		&expr.Fib{Register: unix.NFT_REG_1, FlagDADDR: true, ResultADDRTYPE: true},
		&expr.Cmp{Op: expr.CmpOpNeq, Register: unix.NFT_REG_1, Data: binaryutil.NativeEndian.PutUint32(unix.RTN_LOCAL)},
		&expr.Reject{Type: unix.NFT_REJECT_TCP_RST},
	)
}

// isRefuse reports whether a rule read back is a refuseRule.
func isRefuse(r *nftables.Rule) bool {
	for _, e := range r.Exprs {
		if x, ok := e.(*expr.Reject); ok && x.Type == unix.NFT_REJECT_TCP_RST {
			return true
		}
	}
	return false
}

// servedAddrs counts, per address, the elements of every listener's
// sets that hold it: an address is in the served sets while its count
// is above 0, so what the sets hold is the counts' keys once a pass has
// synced them.
type servedAddrs struct {
	refs map[netip.Addr]int // nil: unknown, counted again from the applied sets
}

// ops are the batches that bring the served sets in line with the
// listeners' sets after a pass's element changes (kinds), or, when the
// counts are unknown, after reading back what the served sets hold.
func (s *servedAddrs) ops(d *Driver, kinds []setOps) [][]elemOp {
	held := map[netip.Addr]bool{} // whether each address touched was in the sets before
	if s.refs == nil {
		s.refs = map[netip.Addr]int{}
		for _, m := range []map[netip.AddrPort]bool{d.applied, d.appliedHTTP, d.appliedHTTPS} {
			for ap := range m {
				s.refs[ap.Addr()]++
				held[ap.Addr()] = false
			}
		}
		for a := range d.readBackServed() {
			held[a] = true
		}
	} else {
		count := func(els []nftables.SetElement, by int) {
			for _, e := range els {
				if ap, ok := parseKey(e.Key); ok {
					a := ap.Addr()
					if _, seen := held[a]; !seen {
						held[a] = s.refs[a] > 0
					}
					s.refs[a] += by
				}
			}
		}
		for _, k := range kinds {
			for fam := range 2 {
				count(k.del[fam], -1)
				count(k.adds[fam], 1)
			}
		}
	}
	var del, add [2][]nftables.SetElement
	for a, was := range held {
		fam := 0
		if a.Is6() {
			fam = 1
		}
		want := s.refs[a] > 0
		if !want {
			delete(s.refs, a)
		}
		switch {
		case want && !was:
			add[fam] = append(add[fam], nftables.SetElement{Key: a.AsSlice()})
		case !want && was:
			del[fam] = append(del[fam], nftables.SetElement{Key: a.AsSlice()})
		}
	}
	return batches(del, add) // batch.go: an address takes less than an element
}

// readBackServed reads the served sets' addresses.
func (d *Driver) readBackServed() map[netip.Addr]bool {
	out := map[netip.Addr]bool{}
	for _, v6 := range []bool{false, true} {
		for _, k := range d.keysOf(servedSet(v6).Name) {
			if a, ok := netip.AddrFromSlice(k); ok {
				out[a.Unmap()] = true
			}
		}
	}
	return out
}

// flushServed writes the served sets' batches; an error leaves the
// counts unknown (the next pass reads the sets back).
func (d *Driver) flushServed(bs [][]elemOp) error {
	for _, b := range bs {
		for _, op := range b {
			if op.del {
				_ = d.conn.SetDeleteElements(servedSet(op.v6), op.els)
			} else {
				_ = d.conn.SetAddElements(servedSet(op.v6), op.els)
			}
		}
		if err := d.conn.Flush(); err != nil {
			d.served = servedAddrs{}
			return err
		}
	}
	return nil
}
