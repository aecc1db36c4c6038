package settings

import (
	"errors"
	"strings"
	"testing"
)

func TestParseSourceRanges(t *testing.T) {
	for _, tc := range []struct {
		name       string
		spec       []string
		annotation string
		want       string // FormatSourceRanges of the result
		errKey     string // "" for no error
	}{
		{name: "none", want: ""},
		{name: "spec", spec: []string{"198.51.100.0/24", "192.0.2.7/32"}, want: "192.0.2.7/32,198.51.100.0/24"},
		{name: "host bits masked, duplicates merged", spec: []string{"192.0.2.9/24", "192.0.2.0/24"}, want: "192.0.2.0/24"},
		{name: "ipv6", spec: []string{"2001:db8::1/32"}, want: "2001:db8::/32"},
		{name: "mapped ipv4", spec: []string{"::ffff:192.0.2.0/120"}, want: "192.0.2.0/24"},
		{name: "mapped ipv4, host bits masked", spec: []string{"::ffff:192.0.2.9/120"}, want: "192.0.2.0/24"},
		{name: "the mapped /96 is every ipv4 client", spec: []string{"::ffff:0:0/96"}, want: "0.0.0.0/0"},
		{name: "ipv6 prefix spanning the mapped space stays ipv6", spec: []string{"::/80"}, want: "::/80"},
		{name: "mapped prefix shorter than /96", spec: []string{"::ffff:10.0.0.0/90"}, errKey: SourceRangesField},
		{name: "mapped prefix shorter than /96, annotation", annotation: "::ffff:0:0/95", errKey: SourceRangesAnnotation},
		{name: "mapped prefix /80", spec: []string{"::ffff:0.0.0.0/80"}, errKey: SourceRangesField},
		{name: "annotation", annotation: " 203.0.113.0/24 , 2001:db8::/48", want: "203.0.113.0/24,2001:db8::/48"},
		{name: "spec wins over annotation", spec: []string{"192.0.2.0/24"}, annotation: "0.0.0.0/0", want: "192.0.2.0/24"},
		{name: "blank annotation is anyone", annotation: "  ", want: ""},
		{name: "bare address", spec: []string{"192.0.2.1"}, errKey: SourceRangesField},
		{name: "leading zeros", annotation: "010.0.0.0/8", errKey: SourceRangesAnnotation},
		{name: "empty entry", annotation: "192.0.2.0/24,,198.51.100.0/24", errKey: SourceRangesAnnotation},
		{name: "injection", annotation: "192.0.2.0/24 } or { always_true", errKey: SourceRangesAnnotation},
		{name: "newline", annotation: "192.0.2.0/24\ntcp-request connection accept", errKey: SourceRangesAnnotation},
		{name: "zone", spec: []string{"fe80::1%eth0/64"}, errKey: SourceRangesField},
		{name: "host name", spec: []string{"example.com/24"}, errKey: SourceRangesField},
		{name: "too long prefix", spec: []string{"192.0.2.0/33"}, errKey: SourceRangesField},
		{name: "too many", annotation: strings.Repeat("192.0.2.0/24,", 1000) + "192.0.2.0/24", errKey: SourceRangesAnnotation},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := ParseSourceRanges(tc.spec, tc.annotation)
			if tc.errKey != "" {
				var re *RangeError
				if !errors.As(err, &re) || re.Key != tc.errKey || !errors.Is(err, ErrInvalid) {
					t.Fatalf("err = %v, want a RangeError for %s", err, tc.errKey)
				}
				if got != nil {
					t.Errorf("ranges %v with an error", got)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if s := FormatSourceRanges(got); s != tc.want {
				t.Errorf("got %q, want %q", s, tc.want)
			}
			if back := FormatSourceRanges(SourceRangesOf(tc.want)); back != tc.want {
				t.Errorf("SourceRangesOf round trip: %q", back)
			}
		})
	}
}

// A damaged last-good value never lets in more than it says.
func TestSourceRangesOfDamaged(t *testing.T) {
	for in, want := range map[string]string{
		"192.0.2.0/24,junk":  "192.0.2.0/24",
		"junk":               "255.255.255.255/32",
		"":                   "",
		"2001:db8::/32,,x/1": "2001:db8::/32",
	} {
		if got := FormatSourceRanges(SourceRangesOf(in)); got != want {
			t.Errorf("SourceRangesOf(%q) = %q, want %q", in, got, want)
		}
	}
}
