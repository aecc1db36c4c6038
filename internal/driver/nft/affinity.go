package nft

import (
	"fmt"
	"net/netip"
	"slices"
	"time"

	"github.com/google/nftables"
	"github.com/google/nftables/binaryutil"
	"github.com/google/nftables/expr"
	"golang.org/x/sys/unix"
)

// ClientIP affinity with a timeout (model.UDPService.Affinity): a port
// with affinity has a dynamic map per family, <chain>_a4 and <chain>_a6,
// from a client address to the server address its last new flow went to,
// each entry expiring Affinity after that flow. The port's chain first
// sends a known client to its server (`dnat ip to ip saddr map
// @<chain>_a4 : PORT`); an unknown one (or one whose entry expired) is
// balanced as usual. The entry is written where the server is known:
// in postrouting, after the DNAT, where the packet's destination is the
// server. The verdict maps `affinity4`/`affinity6` send the new flows
// to a server of a port with affinity to that port's chain <chain>_a,
// which records (or refreshes) the client's entry and masquerades, as
// every one of our flows is.
//
// Keying the record by the server, not by the listen address, needs no
// conntrack expression the library cannot write, and a recorded entry is
// always one of that port's own servers: a server shared by two ports
// with affinity (Pod targets) records for the first by name only (the
// other's clients are then balanced by the source hash alone). An entry
// holds the address only; the port is the rule's, so a family has timed
// affinity only while all its servers share one port (node ports do).
//
// A server that leaves (or drains, or fails its probe) takes its entries
// with it in the same batch: its clients are balanced again at once,
// never sent to it until their entries expire.

const (
	suffixAff4  = "_a4"       // a port's map of IPv4 clients: client : server
	suffixAff6  = "_a6"       // the same for IPv6
	suffixAffCh = "_a"        // a port's chain that records a client's server
	mapAff4     = "affinity4" // IPv4 server . port : goto <chain>_a
	mapAff6     = "affinity6"
	affSize     = 65536 // clients remembered per port and family
)

// affinityPorts sets the ports of s's timed affinity: per family, the
// port all its servers share, or 0.
func affinityPorts(s *Service) {
	common := func(servers []netip.AddrPort) uint16 {
		if len(servers) == 0 {
			return 0
		}
		p := servers[0].Port()
		for _, a := range servers[1:] {
			if a.Port() != p {
				return 0
			}
		}
		return p
	}
	s.AffPort4, s.AffPort6 = common(s.V4), common(s.V6)
}

func affinitySet(svc string, v6 bool) *nftables.Set {
	s := &nftables.Set{Table: table, Name: svc + suffixAff4, IsMap: true, HasTimeout: true, Dynamic: true, Size: affSize,
		KeyType: nftables.TypeIPAddr, DataType: nftables.TypeIPAddr}
	if v6 {
		s.Name, s.KeyType, s.DataType = svc+suffixAff6, nftables.TypeIP6Addr, nftables.TypeIP6Addr
	}
	return s
}

func affinityChain(svc string) *nftables.Chain {
	return &nftables.Chain{Name: svc + suffixAffCh, Table: table}
}

func affinityDispatchSet(v6 bool) *nftables.Set {
	s := &nftables.Set{Table: table, Name: mapAff4, IsMap: true, DataType: nftables.TypeVerdict, Concatenation: true,
		KeyType: nftables.MustConcatSetType(nftables.TypeIPAddr, nftables.TypeInetService)}
	if v6 {
		s.Name, s.KeyType = mapAff6, nftables.MustConcatSetType(nftables.TypeIP6Addr, nftables.TypeInetService)
	}
	return s
}

// affFamily is a family of a port with timed affinity, and its port.
type affFamily struct {
	v6   bool
	port uint16
}

// affinityFamilies lists the families of s with timed affinity.
func affinityFamilies(s Service) []affFamily {
	var out []affFamily
	if s.Affinity <= 0 {
		return nil
	}
	if s.AffPort4 != 0 {
		out = append(out, affFamily{false, s.AffPort4})
	}
	if s.AffPort6 != 0 {
		out = append(out, affFamily{true, s.AffPort6})
	}
	return out
}

func saddrPayload(v6 bool, reg uint32) *expr.Payload {
	if v6 {
		return &expr.Payload{DestRegister: reg, Base: expr.PayloadBaseNetworkHeader, Offset: 8, Len: 16}
	}
	return &expr.Payload{DestRegister: reg, Base: expr.PayloadBaseNetworkHeader, Offset: 12, Len: 4}
}

func daddrPayload(v6 bool, reg uint32) *expr.Payload {
	if v6 {
		return &expr.Payload{DestRegister: reg, Base: expr.PayloadBaseNetworkHeader, Offset: 24, Len: 16}
	}
	return &expr.Payload{DestRegister: reg, Base: expr.PayloadBaseNetworkHeader, Offset: 16, Len: 4}
}

func family(v6 bool) uint32 {
	if v6 {
		return unix.NFPROTO_IPV6
	}
	return unix.NFPROTO_IPV4
}

// stickyRuleExprs send a known client to its server (stickyRules in text).
func stickyRuleExprs(s Service) [][]expr.Any {
	var out [][]expr.Any
	for _, f := range affinityFamilies(s) {
		out = append(out, concat(nfproto(f.v6), l4udp(), []expr.Any{
			saddrPayload(f.v6, reg1),
			&expr.Lookup{SourceRegister: reg1, SetName: affinitySet(s.Name, f.v6).Name, DestRegister: reg1, IsDestRegSet: true},
			&expr.Immediate{Register: reg2, Data: binaryutil.BigEndian.PutUint16(f.port)},
			&expr.NAT{Type: expr.NATTypeDestNAT, Family: family(f.v6), RegAddrMin: reg1, RegAddrMax: reg1,
				RegProtoMin: reg2, RegProtoMax: reg2, Specified: true},
		}))
	}
	return out
}

func stickyRules(s Service) []string {
	var out []string
	for _, f := range affinityFamilies(s) {
		ip, nf := "ip", "ipv4"
		if f.v6 {
			ip, nf = "ip6", "ipv6"
		}
		out = append(out, fmt.Sprintf("meta nfproto %s meta l4proto udp dnat %s to %s saddr map @%s : %d", nf, ip, ip, affinitySet(s.Name, f.v6).Name, f.port))
	}
	return out
}

// recordRuleExprs are the rules of a port's chain <chain>_a: record the
// client's server, then masquerade (recordRules in text).
func recordRuleExprs(s Service) [][]expr.Any {
	var out [][]expr.Any
	for _, f := range affinityFamilies(s) {
		out = append(out, concat(nfproto(f.v6), []expr.Any{
			saddrPayload(f.v6, reg1),
			daddrPayload(f.v6, reg2),
			&expr.Dynset{SrcRegKey: reg1, SrcRegData: reg2, SetName: affinitySet(s.Name, f.v6).Name,
				Operation: unix.NFT_DYNSET_OP_UPDATE, Timeout: s.Affinity},
		}))
	}
	return append(out, []expr.Any{&expr.Masq{}})
}

func recordRules(s Service) []string {
	var out []string
	for _, f := range affinityFamilies(s) {
		ip, nf := "ip", "ipv4"
		if f.v6 {
			ip, nf = "ip6", "ipv6"
		}
		out = append(out, fmt.Sprintf("meta nfproto %s update @%s { %s saddr timeout %ds : %s daddr }",
			nf, affinitySet(s.Name, f.v6).Name, ip, int64(s.Affinity/time.Second), ip))
	}
	return append(out, "masquerade")
}

// affinityElements are the elements of the affinity dispatch maps for
// services: each server of a family with timed affinity to its port's
// record chain, the first port by name for a server of several.
func affinityElements(services []Service) map[netip.AddrPort]string {
	out := map[netip.AddrPort]string{}
	for _, s := range services {
		for _, f := range affinityFamilies(s) {
			servers := s.V4
			if f.v6 {
				servers = s.V6
			}
			for _, a := range servers {
				if c, ok := out[a]; !ok || s.Name+suffixAffCh < c {
					out[a] = s.Name + suffixAffCh
				}
			}
		}
	}
	return out
}

// affinityDispatch queues the changes of the affinity dispatch maps from
// have to want: deletions now (before a chain they name goes), additions
// returned for after the chains exist.
func (d *Driver) affinityDispatch(have, want map[netip.AddrPort]string) (adds func() int, ops int) {
	var del4, del6, add4, add6 []nftables.SetElement
	for a, c := range have {
		if want[a] != c {
			e := nftables.SetElement{Key: addrPort(a.Addr(), a.Port())}
			if a.Addr().Is4() {
				del4 = append(del4, e)
			} else {
				del6 = append(del6, e)
			}
		}
	}
	for a, c := range want {
		if have[a] != c {
			e := nftables.SetElement{Key: addrPort(a.Addr(), a.Port()), VerdictData: gotoChain(c)}
			if a.Addr().Is4() {
				add4 = append(add4, e)
			} else {
				add6 = append(add6, e)
			}
		}
	}
	d.elements(affinityDispatchSet(false), nil, del4)
	d.elements(affinityDispatchSet(true), nil, del6)
	return func() int {
		d.elements(affinityDispatchSet(false), add4, nil)
		d.elements(affinityDispatchSet(true), add6, nil)
		return len(add4) + len(add6)
	}, len(del4) + len(del6)
}

// affinityChanges queues what turns old's timed affinity into s's (both
// in the table; the caller rewrites s's chain when stickyChanged) and
// reports the operations.
func (d *Driver) affinityChanges(old, s Service) int {
	on, was := s.Affinity > 0, old.Affinity > 0
	ops := 0
	switch {
	case on && !was:
		d.addAffinity(s)
		return 1
	case !on && was:
		return 0 // removeAffinity, once the port's chain no longer uses the maps
	case !on:
		return 0
	}
	if old.affStale || old.Affinity != s.Affinity || old.AffPort4 != s.AffPort4 || old.AffPort6 != s.AffPort6 {
		c := affinityChain(s.Name)
		d.conn.FlushChain(c)
		for _, r := range recordRuleExprs(s) {
			d.conn.AddRule(&nftables.Rule{Table: table, Chain: c, Exprs: r})
		}
		ops++
	}
	// Entries of servers no longer in service go, whole maps when the
	// family's port changed.
	for _, v6 := range []bool{false, true} {
		was, now, op, np := old.V4, s.V4, old.AffPort4, s.AffPort4
		if v6 {
			was, now, op, np = old.V6, s.V6, old.AffPort6, s.AffPort6
		}
		set := affinitySet(s.Name, v6)
		if op != np {
			d.conn.FlushSet(set)
			ops++
			continue
		}
		gone := map[netip.Addr]bool{}
		for _, a := range was {
			gone[a.Addr()] = true
		}
		for _, a := range now {
			delete(gone, a.Addr())
		}
		if len(gone) == 0 && !old.affStale {
			continue
		}
		ops += d.forgetClients(set, gone, now)
	}
	return ops
}

// forgetClients deletes the entries of set that point at a gone server,
// or at none of now.
func (d *Driver) forgetClients(set *nftables.Set, gone map[netip.Addr]bool, now []netip.AddrPort) int {
	els, err := d.elementsOf(set.Name)
	if err != nil {
		return 0
	}
	var del []nftables.SetElement
	for _, e := range els {
		a, ok := netip.AddrFromSlice(e.Val)
		if !ok || gone[a] || !slices.ContainsFunc(now, func(s netip.AddrPort) bool { return s.Addr() == a }) {
			del = append(del, nftables.SetElement{Key: e.Key})
		}
	}
	d.elements(set, nil, del)
	return len(del)
}

// addAffinity creates a port's affinity maps and record chain.
func (d *Driver) addAffinity(s Service) {
	_ = d.conn.AddSet(affinitySet(s.Name, false), nil)
	_ = d.conn.AddSet(affinitySet(s.Name, true), nil)
	c := d.conn.AddChain(affinityChain(s.Name))
	for _, r := range recordRuleExprs(s) {
		d.conn.AddRule(&nftables.Rule{Table: table, Chain: c, Exprs: r})
	}
}

// removeAffinity deletes them, once no rule or element uses them.
func (d *Driver) removeAffinity(name string) {
	c := affinityChain(name)
	d.conn.FlushChain(c)
	d.conn.DelChain(c)
	d.conn.DelSet(affinitySet(name, false))
	d.conn.DelSet(affinitySet(name, true))
}
