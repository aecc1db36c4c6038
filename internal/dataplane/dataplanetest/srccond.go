package dataplanetest

import (
	"net/netip"
	"strings"
)

// The conditions of the frontends' tcp-request rules, as far as source
// ranges use them: alternatives joined by "||", each a run of tests that
// must all hold, each test "{ src -f PATH }" or "{ src P... }", negated
// by a leading "!". A client is matched against patterns as HAProxy 2.6.12
// does (ipMatch), families crossed included, so that the server lets in
// what a real HAProxy would.

// srcTest is one "{ src ... }" of a condition: a file's patterns or its
// own.
type srcTest struct {
	neg      bool
	file     string
	patterns []string
}

// srcCond is a condition: any alternative whose tests all hold.
type srcCond [][]srcTest

// parseSrcCond reads a rule's cond_test; false when it is not made of
// source tests only.
func parseSrcCond(test string) (srcCond, bool) {
	var c srcCond
	for _, alt := range strings.Split(test, " || ") {
		var tests []srcTest
		rest := strings.TrimSpace(alt)
		for rest != "" {
			var t srcTest
			rest, t.neg = strings.CutPrefix(rest, "!")
			inner, ok := strings.CutPrefix(rest, "{ src ")
			end := strings.Index(inner, " }")
			if !ok || end < 0 {
				return nil, false
			}
			f := strings.Fields(inner[:end])
			rest = strings.TrimSpace(inner[end+2:])
			if len(f) == 2 && f[0] == "-f" {
				t.file = f[1]
			} else if len(f) > 0 && f[0] != "-f" {
				t.patterns = f
			} else {
				return nil, false
			}
			tests = append(tests, t)
		}
		if len(tests) == 0 {
			return nil, false
		}
		c = append(c, tests)
	}
	return c, true
}

// files are the pattern files c reads, in order.
func (c srcCond) files() []string {
	var out []string
	for _, alt := range c {
		for _, t := range alt {
			if t.file != "" {
				out = append(out, t.file)
			}
		}
	}
	return out
}

// holds evaluates c for the client src, a file's patterns given by file.
func (c srcCond) holds(src netip.Addr, file func(string) []string) bool {
	for _, alt := range c {
		all := true
		for _, t := range alt {
			ps := t.patterns
			if t.file != "" {
				ps = file(t.file)
			}
			if ipMatch(ps, src) == t.neg {
				all = false
				break
			}
		}
		if all {
			return true
		}
	}
	return false
}

// ipMatch matches a client against IP patterns as HAProxy 2.6.12 does
// (measured): an IPv4 client that is in no IPv4 pattern is tried against
// the IPv6 ones as ::ffff:a.b.c.d; an IPv6 client in no IPv6 pattern,
// when it is IPv4-mapped, IPv4-compatible (::a.b.c.d) or 6to4
// (2002:a.b.c.d::/48), against the IPv4 ones as a.b.c.d.
func ipMatch(patterns []string, src netip.Addr) bool {
	var in4, in6 []netip.Prefix
	for _, v := range patterns {
		if p, ok := pattern(v); ok && p.Addr().Is4() {
			in4 = append(in4, p)
		} else if ok {
			in6 = append(in6, p)
		}
	}
	in := func(ps []netip.Prefix, a netip.Addr) bool {
		for _, p := range ps {
			if p.Contains(a) {
				return true
			}
		}
		return false
	}
	if src.Is4() {
		return in(in4, src) || in(in6, netip.AddrFrom16(src.As16()))
	}
	if in(in6, src) {
		return true
	}
	b := src.As16()
	zero8 := [8]byte{}
	switch {
	case [8]byte(b[:8]) == zero8 && (b[8] == 0 && b[9] == 0 && b[10] == 0 && b[11] == 0 || b[8] == 0 && b[9] == 0 && b[10] == 0xff && b[11] == 0xff):
		return in(in4, netip.AddrFrom4([4]byte(b[12:])))
	case b[0] == 0x20 && b[1] == 0x02:
		return in(in4, netip.AddrFrom4([4]byte(b[2:6])))
	}
	return false
}
