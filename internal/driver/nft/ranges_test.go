package nft

import (
	"fmt"
	"net/netip"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/haproxy-k8s-sync/haproxy-k8s-sync/internal/model"
	"github.com/haproxy-k8s-sync/haproxy-k8s-sync/internal/testing/netlab"
)

func prefixes(s ...string) []netip.Prefix {
	out := []netip.Prefix{}
	for _, x := range s {
		out = append(out, netip.MustParsePrefix(x))
	}
	return out
}

func TestCanonicalRanges(t *testing.T) {
	for _, tc := range []struct {
		in     []netip.Prefix
		v4, v6 string
	}{
		{prefixes("192.0.2.0/24", "192.0.2.128/25"), "192.0.2.0/24", ""},
		{prefixes("192.0.2.0/25", "192.0.2.128/25"), "192.0.2.0/24", ""},
		{prefixes("192.0.2.1/32", "192.0.2.2/32", "192.0.2.3/32"), "192.0.2.1/32 192.0.2.2/31", ""},
		{prefixes("0.0.0.0/0", "198.51.100.0/24"), "0.0.0.0/0", ""},
		{prefixes("255.255.255.255/32"), "255.255.255.255/32", ""},
		{prefixes("2001:db8::/32", "203.0.113.0/24", "2001:db8:1::/48"), "203.0.113.0/24", "2001:db8::/32"},
	} {
		v4, v6 := canonicalRanges(tc.in)
		if got := strings.Join(srcText(v4), " "); got != tc.v4 {
			t.Errorf("%v: v4 %q, want %q", tc.in, got, tc.v4)
		}
		if got := strings.Join(srcText(v6), " "); got != tc.v6 {
			t.Errorf("%v: v6 %q, want %q", tc.in, got, tc.v6)
		}
		// What the kernel holds reads back as the same prefixes.
		for _, fam := range []struct {
			ps []netip.Prefix
			v6 bool
		}{{v4, false}, {v6, true}} {
			back, ok := prefixesOfElements(srcElements(fam.ps), fam.v6)
			if !ok || !slices.Equal(back, fam.ps) {
				t.Errorf("%v: elements read back as %v (%v)", fam.ps, back, ok)
			}
		}
	}
}

// Only clients in the ranges are served; a change of ranges is one batch,
// cuts the flows of clients no longer allowed, and survives a restart of
// the driver without a batch.
func TestDriverSourceRanges(t *testing.T) {
	lab := netlab.New(t, 2)
	lab.Echo(nodePort)
	d := newDriver(t, lab, Health{Kind: "none"})
	client := func(i int) netip.AddrPort {
		return netip.AddrPortFrom(netip.MustParseAddr(fmt.Sprintf("192.0.2.%d", i)), 0)
	}
	served := func(f *netlab.Flow) bool {
		_, err := f.Ask(400 * time.Millisecond)
		return err == nil
	}
	expect := func(step string, want map[int]bool) {
		t.Helper()
		for c, w := range want {
			if got := served(lab.Dial(client(c), listen)); got != w {
				t.Errorf("%s: client 192.0.2.%d served %v, want %v", step, c, got, w)
			}
		}
	}
	u := wg(model.BalanceRoundRobin, lab.Nodes...)
	u.SourceRanges = prefixes("192.0.2.16/30", "2001:db8::/32")
	apply(t, d, u)
	expect("16/30", map[int]bool{16: true, 19: true, 10: false, 20: false})
	kept := lab.Dial(client(17), listen) // an established flow
	if !served(kept) {
		t.Fatal("client 17 not served")
	}

	before := batches(d)
	u.SourceRanges = prefixes("192.0.2.10/32")
	apply(t, d, u)
	if n := batches(d) - before; n != 1 {
		t.Errorf("a change of ranges took %d batches, want 1", n)
	}
	expect("10/32", map[int]bool{10: true, 16: false, 17: false})
	if served(kept) {
		t.Errorf("the flow of a client no longer allowed is still served")
	}

	restarted := newDriver(t, lab, Health{Kind: "none"})
	apply(t, restarted, u)
	if n := batches(restarted); n != 0 {
		t.Errorf("a restarted driver sent %d batches for unchanged ranges:\n%s", n, listTable(t, lab))
	}

	u.SourceRanges = nil
	apply(t, restarted, u)
	expect("open", map[int]bool{10: true, 16: true, 25: true})
	if tbl := listTable(t, lab); strings.Contains(tbl, suffixSrc4) {
		t.Errorf("source sets left in an open port's table:\n%s", tbl)
	}
}
