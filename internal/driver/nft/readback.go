package nft

import (
	"net/netip"
	"slices"
	"strings"
	"time"

	"github.com/google/nftables"
	"github.com/google/nftables/expr"
	"github.com/mdlayher/netlink"
	"golang.org/x/sys/unix"

	"github.com/haproxy-k8s-sync/haproxy-k8s-sync/internal/model"
)

// readBack reads what the table holds, so that a controller that starts
// (again) changes only what differs from the model: elements that should
// stay are not touched. Whatever it cannot read as ours is rewritten by
// the first batch (an unexpected chain content makes its rules replaced).
// Draining servers cannot be told apart from removed ones: their
// conntrack entries are left alone.
func (d *Driver) readBack() (exists bool, applied map[string]Service, base bool, err error) {
	tables, err := d.conn.ListTablesOfFamily(nftables.TableFamilyINet)
	if err != nil {
		return false, nil, false, err
	}
	found := false
	for _, t := range tables {
		found = found || t.Name == Table
	}
	out := map[string]Service{}
	if !found {
		return false, out, false, nil
	}
	chains, err := d.conn.ListChainsOfTableFamily(nftables.TableFamilyINet)
	if err != nil {
		return true, nil, false, err
	}
	for _, c := range chains {
		if c.Table.Name == Table && c.Name != chainPre && c.Name != chainPost && !strings.HasSuffix(c.Name, suffixAffCh) {
			out[c.Name] = Service{Name: c.Name}
		}
	}
	for _, m := range []string{mapAny, mapAddr4, mapAddr6} {
		els, err := d.elementsOf(m)
		if err != nil {
			continue // missing: created by the first batch
		}
		for _, e := range els {
			s, ok := out[verdictChain(e)]
			if !ok {
				continue
			}
			if m == mapAny && len(e.Key) >= 2 {
				s.Any, s.Port = true, uint16(e.Key[0])<<8|uint16(e.Key[1])
			} else if ap, ok := parseAddrPort(e.Key); ok {
				s.Addrs, s.Port = append(s.Addrs, ap.Addr()), ap.Port()
			}
			out[s.Name] = s
		}
	}
	for name, s := range out {
		s.V4 = d.readServers(serverMap(name, false))
		s.V6 = d.readServers(serverMap(name, true))
		s.Restricted, s.Src4, s.Src6, s.srcStale = d.readSources(name)
		s.Affinity, s.affStale = d.readAffinity(name)
		s.Balance, s.AffPort4, s.AffPort6, s.stale = d.readBalance(name, len(s.V4), len(s.V6), s.Restricted)
		slices.SortFunc(s.Addrs, netip.Addr.Compare)
		out[name] = s
	}
	return true, out, d.baseInPlace(), nil
}

// baseInPlace reports whether the fixed rules are the ones queueBase
// writes (checked by the sets they use) and the fixed sets exist.
func (d *Driver) baseInPlace() bool {
	for _, m := range []string{setPorts, mapAny, mapAddr4, mapAddr6, mapAff4, mapAff6} {
		if _, err := d.conn.GetSetByName(table, m); err != nil {
			return false
		}
	}
	pre, post := baseChains()
	rules, err := d.conn.GetRules(table, pre)
	if err != nil || len(rules) != 3 {
		return false
	}
	for i, want := range []string{mapAddr4, mapAddr6, mapAny} {
		if !slices.ContainsFunc(rules[i].Exprs, func(e expr.Any) bool {
			l, ok := e.(*expr.Lookup)
			return ok && l.SetName == want
		}) {
			return false
		}
	}
	// The library cannot decode the rule of the postrouting chain (it
	// reads the u8 conntrack direction as a u32): check it by count when
	// it can, by the chain's existence otherwise.
	if rules, err := d.conn.GetRules(table, post); err == nil {
		return len(rules) == 3 && slices.ContainsFunc(rules[2].Exprs, func(e expr.Any) bool { _, ok := e.(*expr.Masq); return ok })
	}
	_, err = d.conn.ListChain(table, chainPost)
	return err == nil
}

// elementsOf reads a set's elements (through the set as the kernel
// describes it, which tells how to decode them).
func (d *Driver) elementsOf(name string) ([]nftables.SetElement, error) {
	s, err := d.conn.GetSetByName(table, name)
	if err != nil {
		return nil, err
	}
	return d.conn.GetSetElements(s)
}

func (d *Driver) readServers(m *nftables.Set) []netip.AddrPort {
	els, err := d.elementsOf(m.Name)
	if err != nil {
		return nil
	}
	var out []netip.AddrPort
	for _, e := range els {
		i, ok := parseIndexKey(e.Key)
		ap, ok2 := parseAddrPort(e.Val)
		if !ok || !ok2 || i >= maxServers {
			continue
		}
		for len(out) <= i {
			out = append(out, netip.AddrPort{}) // a hole: filled by the next batch
		}
		out[i] = ap
	}
	return out
}

// readBalance tells the balance of a port's chain, the ports of its
// timed affinity (its sticky rules), and stale when its rules are not
// exactly what serviceRuleExprs writes for n4 and n6 servers (the next
// batch replaces them).
func (d *Driver) readBalance(name string, n4, n6 int, restricted bool) (balance string, aff4, aff6 uint16, stale bool) {
	rules, err := d.conn.GetRules(table, serviceChain(name))
	if err != nil {
		return "", 0, 0, true
	}
	// The source rules come first: as many as srcRuleExprs writes.
	nsrc := 0
	for _, r := range rules {
		if slices.ContainsFunc(r.Exprs, func(e expr.Any) bool { l, ok := e.(*expr.Lookup); return ok && l.Invert }) {
			nsrc++
		}
	}
	if restricted != (nsrc == 2) || !restricted && nsrc != 0 {
		return "", 0, 0, true
	}
	rules = rules[nsrc:]
	// Then the sticky rules of timed affinity: a lookup in the port's
	// affinity map, the port, the DNAT.
	for len(rules) > 0 {
		var set string
		var port []byte
		for _, e := range rules[0].Exprs {
			switch x := e.(type) {
			case *expr.Lookup:
				set = x.SetName
			case *expr.Immediate:
				port = x.Data
			}
		}
		if len(port) < 2 || (set != name+suffixAff4 && set != name+suffixAff6) {
			break
		}
		p := uint16(port[0])<<8 | uint16(port[1])
		if set == name+suffixAff4 {
			aff4 = p
		} else {
			aff6 = p
		}
		rules = rules[1:]
	}
	dnats := 0
	want := map[uint32]int{unix.NFPROTO_IPV4: n4, unix.NFPROTO_IPV6: n6}
	for _, r := range rules {
		var mod uint32
		var b string
		for _, e := range r.Exprs {
			switch x := e.(type) {
			case *expr.Numgen:
				mod, b = x.Modulus, model.BalanceRoundRobin
			case *expr.Hash:
				mod, b = x.Modulus, model.BalanceSource
			case *expr.NAT:
				if b == "" || int(mod) != want[x.Family] || (balance != "" && balance != b) {
					return "", aff4, aff6, true
				}
				balance, dnats = b, dnats+1
			}
		}
	}
	expected := 0
	for _, n := range want {
		if n > 0 {
			expected++
		}
	}
	return balance, aff4, aff6, dnats != expected || len(rules) != expected+1
}

// readAffinity reads the timeout of a port's record chain (0: it has
// none), and stale when the chain is not what recordRuleExprs writes.
func (d *Driver) readAffinity(name string) (time.Duration, bool) {
	rules, err := d.conn.GetRules(table, affinityChain(name))
	if err != nil || len(rules) == 0 {
		return 0, false
	}
	var timeout time.Duration
	for _, r := range rules[:len(rules)-1] {
		for _, e := range r.Exprs {
			if x, ok := e.(*expr.Dynset); ok {
				if timeout != 0 && x.Timeout != timeout {
					return timeout, true
				}
				timeout = x.Timeout
			}
		}
	}
	last := rules[len(rules)-1].Exprs
	masq := len(last) == 1
	if masq {
		_, masq = last[0].(*expr.Masq)
	}
	if timeout == 0 {
		timeout = time.Second // a chain without a family: rewritten
		return timeout, true
	}
	return timeout, !masq
}

// readAffinityDispatch reads the affinity dispatch maps.
func (d *Driver) readAffinityDispatch() map[netip.AddrPort]string {
	out := map[netip.AddrPort]string{}
	for _, m := range []string{mapAff4, mapAff6} {
		els, err := d.elementsOf(m)
		if err != nil {
			continue
		}
		for _, e := range els {
			if ap, ok := parseAddrPort(e.Key); ok {
				out[ap] = verdictChain(e)
			}
		}
	}
	return out
}

// readSources reads a port's source sets: restricted when both exist,
// and stale when their elements are not what srcElements writes.
func (d *Driver) readSources(name string) (restricted bool, v4, v6 []netip.Prefix, stale bool) {
	var sets [2][]netip.Prefix
	found := 0
	for i, v6 := range []bool{false, true} {
		els, err := d.elementsOf(srcSet(name, v6).Name)
		if err != nil {
			continue
		}
		found++
		ps, ok := prefixesOfElements(els, v6)
		stale = stale || !ok
		sets[i] = ps
	}
	if found == 0 {
		return false, nil, nil, false
	}
	return true, sets[0], sets[1], stale || found != 2
}

// verdictChain is the chain of a verdict-map element ("goto CHAIN"). The
// library leaves the verdict undecoded in Val when reading: nested
// attributes, NFTA_VERDICT_CODE then NFTA_VERDICT_CHAIN.
func verdictChain(e nftables.SetElement) string {
	if e.VerdictData != nil {
		return e.VerdictData.Chain
	}
	ad, err := netlink.NewAttributeDecoder(e.Val)
	if err != nil {
		return ""
	}
	for ad.Next() {
		if ad.Type() == unix.NFTA_VERDICT_CHAIN {
			return ad.String()
		}
	}
	return ""
}
