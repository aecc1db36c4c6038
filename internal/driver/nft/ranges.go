package nft

import (
	"fmt"
	"net/netip"
	"slices"

	"github.com/google/nftables"
	"github.com/google/nftables/expr"

	"github.com/haproxy-k8s-sync/haproxy-k8s-sync/internal/settings"
)

// Source ranges (model.UDPService.SourceRanges): a restricted port has an
// interval set of allowed sources per family, <chain>_src4 and
// <chain>_src6, and its chain first drops datagrams from any other
// source, before a server is chosen. An empty set of a family drops that
// whole family. Changing the ranges replaces the sets' elements in the
// batch of the pass (atomic); the flows of sources no longer allowed are
// then deleted from conntrack, since an established flow skips the chain.

const (
	suffixSrc4 = "_src4"
	suffixSrc6 = "_src6"
)

// addrRange is the inclusive range first..last of one family.
type addrRange struct{ first, last netip.Addr }

// lastAddr is the last address of p.
func lastAddr(p netip.Prefix) netip.Addr {
	b := p.Masked().Addr().AsSlice()
	for i := p.Bits(); i < len(b)*8; i++ {
		b[i/8] |= 0x80 >> (i % 8)
	}
	a, _ := netip.AddrFromSlice(b)
	return a
}

// mergeRanges turns prefixes of one family into sorted, disjoint and
// non-adjacent ranges (the kernel refuses overlapping intervals).
func mergeRanges(ps []netip.Prefix) []addrRange {
	ps = slices.Clone(ps)
	slices.SortFunc(ps, settings.ComparePrefix)
	var out []addrRange
	for _, p := range ps {
		r := addrRange{p.Masked().Addr(), lastAddr(p)}
		if n := len(out); n > 0 {
			prev := &out[n-1]
			if next := prev.last.Next(); !next.IsValid() || r.first.Compare(next) <= 0 {
				if r.last.Compare(prev.last) > 0 {
					prev.last = r.last
				}
				continue
			}
		}
		out = append(out, r)
	}
	return out
}

// prefixesOf is the fewest prefixes that cover exactly first..last.
func prefixesOf(r addrRange) []netip.Prefix {
	var out []netip.Prefix
	first := r.first
	for first.IsValid() && first.Compare(r.last) <= 0 {
		bits := first.BitLen()
		for b := 0; b <= first.BitLen(); b++ {
			p := netip.PrefixFrom(first, b)
			if p.Masked().Addr() == first && lastAddr(p).Compare(r.last) <= 0 {
				bits = b
				break
			}
		}
		p := netip.PrefixFrom(first, bits)
		out = append(out, p)
		first = lastAddr(p).Next()
	}
	return out
}

// canonicalRanges splits ps by family into the canonical prefixes of
// their merged ranges: what the table holds, and what it reads back as.
func canonicalRanges(ps []netip.Prefix) (v4, v6 []netip.Prefix) {
	var in4, in6 []netip.Prefix
	for _, p := range ps {
		if p.Addr().Is4() {
			in4 = append(in4, p)
		} else {
			in6 = append(in6, p)
		}
	}
	for _, r := range mergeRanges(in4) {
		v4 = append(v4, prefixesOf(r)...)
	}
	for _, r := range mergeRanges(in6) {
		v6 = append(v6, prefixesOf(r)...)
	}
	if v4 == nil {
		v4 = []netip.Prefix{}
	}
	if v6 == nil {
		v6 = []netip.Prefix{}
	}
	return v4, v6
}

// srcText is the elements of a source set in nft syntax.
func srcText(ps []netip.Prefix) []string {
	out := make([]string, len(ps))
	for i, p := range ps {
		out[i] = p.String()
	}
	return out
}

// srcSet is a port's set of allowed sources of one family.
func srcSet(svc string, v6 bool) *nftables.Set {
	s := &nftables.Set{Table: table, Name: svc + suffixSrc4, KeyType: nftables.TypeIPAddr, Interval: true}
	if v6 {
		s.Name, s.KeyType = svc+suffixSrc6, nftables.TypeIP6Addr
	}
	return s
}

// srcElements are the interval elements of ps: each merged range is its
// first address and, unless it reaches the family's last address, the
// address after it marked as an interval end.
func srcElements(ps []netip.Prefix) []nftables.SetElement {
	var out []nftables.SetElement
	for _, r := range mergeRanges(ps) {
		out = append(out, nftables.SetElement{Key: r.first.AsSlice()})
		if next := r.last.Next(); next.IsValid() {
			out = append(out, nftables.SetElement{Key: next.AsSlice(), IntervalEnd: true})
		}
	}
	return out
}

// prefixesOfElements reads interval elements back into canonical
// prefixes; ok is false when they are not what srcElements writes.
func prefixesOfElements(els []nftables.SetElement, v6 bool) (out []netip.Prefix, ok bool) {
	type el struct {
		a   netip.Addr
		end bool
	}
	var es []el
	for _, e := range els {
		a, good := netip.AddrFromSlice(e.Key)
		if !good || a.Is6() != v6 {
			return nil, false
		}
		es = append(es, el{a, e.IntervalEnd})
	}
	slices.SortFunc(es, func(x, y el) int {
		if c := x.a.Compare(y.a); c != 0 {
			return c
		}
		if x.end == y.end {
			return 0
		}
		if x.end {
			return -1
		}
		return 1
	})
	out = []netip.Prefix{}
	for i := 0; i < len(es); i++ {
		if es[i].end {
			if i == 0 && (es[i].a == netip.IPv4Unspecified() || es[i].a == netip.IPv6Unspecified()) {
				continue // the kernel's or nft's leading end marker
			}
			return nil, false
		}
		r := addrRange{first: es[i].a}
		if i+1 < len(es) && es[i+1].end {
			r.last = es[i+1].a.Prev()
			i++
		} else {
			r.last = lastAddr(netip.PrefixFrom(r.first, 0))
		}
		out = append(out, prefixesOf(r)...)
	}
	return out, true
}

// srcRuleExprs drop the datagrams of a family from sources outside the
// port's set (srcRules in text).
func srcRuleExprs(s Service) [][]expr.Any {
	var out [][]expr.Any
	for _, v6 := range []bool{false, true} {
		saddr := &expr.Payload{DestRegister: reg1, Base: expr.PayloadBaseNetworkHeader, Offset: 12, Len: 4}
		if v6 {
			saddr = &expr.Payload{DestRegister: reg1, Base: expr.PayloadBaseNetworkHeader, Offset: 8, Len: 16}
		}
		out = append(out, concat(nfproto(v6), []expr.Any{
			saddr,
			&expr.Lookup{SourceRegister: reg1, SetName: srcSet(s.Name, v6).Name, Invert: true},
			&expr.Verdict{Kind: expr.VerdictDrop},
		}))
	}
	return out
}

// srcRules are srcRuleExprs in nft syntax.
func srcRules(s Service) []string {
	return []string{
		fmt.Sprintf("meta nfproto ipv4 ip saddr != @%s drop", s.Name+suffixSrc4),
		fmt.Sprintf("meta nfproto ipv6 ip6 saddr != @%s drop", s.Name+suffixSrc6),
	}
}

// allowed reports whether a is in ps.
func allowed(ps []netip.Prefix, a netip.Addr) bool {
	a = a.Unmap()
	return slices.ContainsFunc(ps, func(p netip.Prefix) bool { return p.Contains(a) })
}

// sources queues what turns old's source sets into s's (the sets only;
// the caller rewrites the chain when Restricted changes, and deletes the
// sets of a port no longer restricted after that).
func (d *Driver) sources(old, s Service) int {
	if !s.Restricted {
		return 0
	}
	ops := 0
	for _, v6 := range []bool{false, true} {
		want, have := s.Src4, old.Src4
		if v6 {
			want, have = s.Src6, old.Src6
		}
		set := srcSet(s.Name, v6)
		switch {
		case !old.Restricted:
			_ = d.conn.AddSet(set, srcElements(want))
			ops++
		case old.srcStale || !slices.Equal(want, have):
			d.conn.FlushSet(set)
			if els := srcElements(want); len(els) > 0 {
				_ = d.conn.SetAddElements(set, els)
			}
			ops++
		}
	}
	return ops
}

// narrowed lists the restricted ports of want whose allowed sources were
// different (or unrestricted) in prev: their established flows from
// sources now outside are deleted.
func narrowed(prev map[string]Service, want []Service) []Service {
	var out []Service
	for _, s := range want {
		if !s.Restricted {
			continue
		}
		p, ok := prev[s.Name]
		if !ok || !p.Restricted || p.srcStale || !slices.Equal(p.Src4, s.Src4) || !slices.Equal(p.Src6, s.Src6) {
			out = append(out, s)
		}
	}
	return out
}
