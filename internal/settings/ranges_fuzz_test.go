package settings

import (
	"net/netip"
	"slices"
	"strings"
	"testing"
)

// FuzzParseSourceRanges feeds one annotation value to ParseSourceRanges.
// What it accepts is canonical (masked, sorted, no duplicates, no zone, no
// IPv4-mapped prefix: those are their IPv4 range) and reads back the same;
// every entry keeps its family and its addresses; an IPv4-mapped entry
// shorter than /96 is refused.
func FuzzParseSourceRanges(f *testing.F) {
	for _, s := range []string{
		"10.0.0.0/8, ::/0", "::ffff:10.0.0.0/104", "::ffff:0:0/96", "::ffff:10.0.0.0/90", "::ffff:0.0.0.0/80",
		"::/80", "2002:a00::/24", "192.0.2.9/24,192.0.2.0/24", "fe80::1%eth0/64", "010.0.0.0/8", "",
	} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, value string) {
		got, err := ParseSourceRanges(nil, value)
		var items []netip.Prefix
		mappedShort := false
		for _, it := range strings.Split(value, ",") {
			p, perr := netip.ParsePrefix(strings.TrimSpace(it))
			if perr != nil {
				continue
			}
			if p.Addr().Is4In6() && p.Bits() < 96 {
				mappedShort = true
			}
			items = append(items, p)
		}
		if err != nil {
			if got != nil {
				t.Fatalf("%q: ranges %v with an error", value, got)
			}
			return
		}
		if mappedShort {
			t.Fatalf("%q: an IPv4-mapped prefix shorter than /96 accepted as %v", value, got)
		}
		for _, p := range got {
			if p != p.Masked() || p.Addr().Zone() != "" || p.Addr().Is4In6() {
				t.Fatalf("%q: not canonical: %v", value, p)
			}
		}
		if !slices.IsSortedFunc(got, ComparePrefix) || len(slices.Compact(slices.Clone(got))) != len(got) {
			t.Fatalf("%q: not sorted or duplicates: %v", value, got)
		}
		if back := SourceRangesOf(FormatSourceRanges(got)); !slices.Equal(back, got) && len(got) > 0 {
			t.Fatalf("%q: %v reads back as %v", value, got, back)
		}
		for _, p := range items {
			a := p.Masked().Addr()
			want4 := a.Is4() || a.Is4In6()
			if a.Is4In6() {
				a = a.Unmap()
			}
			if !slices.ContainsFunc(got, func(q netip.Prefix) bool { return q.Addr().Is4() == want4 && q.Contains(a) }) {
				t.Fatalf("%q: %v (%v) is in no range of its family in %v", value, p, a, got)
			}
		}
	})
}
