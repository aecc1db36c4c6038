package model

import (
	"regexp"
	"strings"
	"testing"
)

// sniPattern is what ValidSNI was (a regular expression): the reference
// its written-out form must agree with.
var sniPattern = regexp.MustCompile(`^(\*\.)?[a-z0-9]([-a-z0-9]{0,61}[a-z0-9])?(\.[a-z0-9]([-a-z0-9]{0,61}[a-z0-9])?)*$`)

func sniReference(h string) bool { return len(h) <= 253 && sniPattern.MatchString(h) }

func TestValidSNI(t *testing.T) {
	label63 := strings.Repeat("a", 63)
	long := strings.Repeat(label63+".", 4) // 256 bytes with the last dot
	for _, tc := range []struct {
		h    string
		want bool
	}{
		{"a.example.com", true},
		{"example", true},
		{"*.example.com", true},
		{"x-1.b2.example", true},
		{"0.a", true},
		{label63 + ".com", true},
		{strings.Repeat("a", 64) + ".com", false},
		{long[:253], true},  // 253 bytes: the longest name
		{long[:254], false}, // 254 bytes
		{long[:192], false}, // three labels and a dot
		{"", false},
		{"*", false},
		{"*.", false},
		{"*.*.example.com", false},
		{"a.*.example.com", false},
		{"-a.example", false},
		{"a-.example", false},
		{"a..example", false},
		{".example", false},
		{"example.", false},
		{"A.example", false},
		{"a_b.example", false},
		{"a.example com", false},
		{"a.example\n", false},
		{"a.example;x", false},
		{"**.example", false},
	} {
		if got := ValidSNI(tc.h); got != tc.want {
			t.Errorf("ValidSNI(%q) = %v, want %v", tc.h, got, tc.want)
		}
		if ref := sniReference(tc.h); ref != tc.want {
			t.Errorf("the reference says %v for %q, the table %v", ref, tc.h, tc.want)
		}
	}
}

// FuzzValidSNI: the written-out ValidSNI agrees with the regular
// expression it replaced on every input.
func FuzzValidSNI(f *testing.F) {
	for _, s := range []string{"a.example.com", "*.example.com", "-a", "a-", "a..b", "*.", "", "A", strings.Repeat("a", 64)} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, h string) {
		if got, want := ValidSNI(h), sniReference(h); got != want {
			t.Fatalf("ValidSNI(%q) = %v, the regular expression says %v", h, got, want)
		}
	})
}

// BenchmarkValidSNI: the written-out form against the regular expression.
func BenchmarkValidSNI(b *testing.B) {
	names := []string{"a.example.com", "gw123.example.com", "*.apps.cluster.example.org", "bad name"}
	b.Run("written", func(b *testing.B) {
		for b.Loop() {
			for _, n := range names {
				_ = ValidSNI(n)
			}
		}
	})
	b.Run("regexp", func(b *testing.B) {
		for b.Loop() {
			for _, n := range names {
				_ = sniReference(n)
			}
		}
	})
}
