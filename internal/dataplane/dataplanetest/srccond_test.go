package dataplanetest

import (
	"net/netip"
	"testing"
)

// The server lets in what HAProxy 2.6.12 does, families crossed included
// (the cases measured with set-src on the real one).
func TestIPMatch(t *testing.T) {
	both := []string{"10.0.0.0/8", "::/0"}
	v4 := []string{"10.0.0.0/8"}
	v6 := []string{"2001:db8::/32"}
	for _, tc := range []struct {
		patterns []string
		src      string
		want     bool
	}{
		{both, "10.1.2.3", true},
		{both, "11.1.2.3", true}, // as ::ffff:11.1.2.3, in ::/0
		{v4, "11.1.2.3", false},
		{v4, "::ffff:10.1.2.3", true},
		{v4, "::10.1.2.3", true},      // IPv4-compatible
		{v4, "2002:a01:203::1", true}, // 6to4 of 10.1.2.3
		{v4, "2001:db8::1", false},
		{v4, "::ffff:0:a01:203", false},
		{v6, "2001:db8::1", true},
		{v6, "10.1.2.3", false},
		{[]string{"::ffff:0:0/96"}, "198.51.100.7", true},
		{[]string{"::ffff:0:0/96"}, "2002:c633:6407::1", false},
		{nil, "10.1.2.3", false},
	} {
		if got := ipMatch(tc.patterns, netip.MustParseAddr(tc.src)); got != tc.want {
			t.Errorf("%s in %v: %v, want %v", tc.src, tc.patterns, got, tc.want)
		}
	}
}

func TestParseSrcCond(t *testing.T) {
	files := map[string][]string{"/a4": {"10.0.0.0/8"}, "/a6": {"::/0"}}
	file := func(p string) []string { return files[p] }
	perFamily := "{ src ::ffff:0:0/96 } { src -f /a4 } || !{ src ::ffff:0:0/96 } { src -f /a6 }"
	for _, tc := range []struct {
		test string
		ok   bool
		in   map[string]bool
	}{
		{perFamily, true, map[string]bool{"10.1.2.3": true, "11.1.2.3": false, "::1": true, "::ffff:11.1.2.3": false, "2002:a01:203::1": true}},
		{"{ src -f /a4 }", true, map[string]bool{"10.1.2.3": true, "::1": false, "2002:a01:203::1": true}},
		{"{ src 192.0.2.0/24 198.51.100.7 }", true, map[string]bool{"192.0.2.9": true, "198.51.100.8": false}},
		{"{ src -f }", false, nil},
		{"{ always_true }", false, nil},
		{"{ src 192.0.2.0/24", false, nil},
		{"", false, nil},
	} {
		c, ok := parseSrcCond(tc.test)
		if ok != tc.ok {
			t.Errorf("parseSrcCond(%q): ok %v, want %v", tc.test, ok, tc.ok)
			continue
		}
		for src, want := range tc.in {
			if got := c.holds(netip.MustParseAddr(src), file); got != want {
				t.Errorf("%q for %s: %v, want %v", tc.test, src, got, want)
			}
		}
	}
	if c, _ := parseSrcCond(perFamily); len(c.files()) != 2 {
		t.Errorf("files of %q: %v", perFamily, c.files())
	}
}
