package model

import (
	"net/netip"
	"regexp"
	"strings"
	"testing"
)

// nameGrammar is what every identifier written into haproxy.cfg or the
// nftables ruleset looks like: the prefix, then the safe alphabet.
var nameGrammar = regexp.MustCompile(`^fe_[a-z0-9_-]+$`)

func TestName(t *testing.T) {
	for _, tc := range []struct {
		name  string
		parts []string
		want  string // "" when hashed: only the grammar is checked
		same  bool   // written as it is
	}{
		{"clean", []string{"default", "web", "80"}, "fe_default_web_80", true},
		{"newline", []string{"default", "web\n\tbind :81"}, "", false},
		{"comment", []string{"default", "web#x"}, "", false},
		{"space and quotes", []string{"my ns", `"web'`}, "", false},
		{"unicode", []string{"default", "wéb"}, "", false},
		{"dot", []string{"default", "web.example"}, "", false},
		{"upper case", []string{"Default", "web"}, "", false},
		{"underscore", []string{"a_b", "c"}, "", false}, // would collide with a, b_c
		{"long", []string{strings.Repeat("a", 63), strings.Repeat("b", 63), "65535"}, "", true},
		{"too long", []string{strings.Repeat("a", 150), strings.Repeat("b", 150)}, "", false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := Name("fe", tc.parts...)
			raw := "fe_" + strings.Join(tc.parts, "_")
			if !nameGrammar.MatchString(got) || len(got) > MaxNameLen {
				t.Errorf("Name = %q: outside the grammar or longer than %d", got, MaxNameLen)
			}
			if tc.want != "" && got != tc.want {
				t.Errorf("Name = %q, want %q", got, tc.want)
			}
			if (got == raw) != tc.same {
				t.Errorf("Name = %q: written as it is %v, want %v", got, got == raw, tc.same)
			}
		})
	}
	if Name("fe", "a_b", "c") == Name("fe", "a", "b_c") {
		t.Error("two part lists with one joined text share a name")
	}
}

// FuzzName: whatever the parts (a file render reads can hold anything),
// the name is in the grammar, bounded, the same every time, written as it
// is when already clean, and parts of a clean name that differ give
// names that differ.
func FuzzName(f *testing.F) {
	f.Add("default", "web", "80", "kube-system", "dns")
	f.Add("default", "web\n\tbind :81", "80", "x", "y#z")
	f.Add("ns", `"q'`, "-80", "wé", "")
	f.Fuzz(func(t *testing.T, ns, name, port, ns2, name2 string) {
		got := Name("fe", ns, name, port)
		if !nameGrammar.MatchString(got) || len(got) > MaxNameLen {
			t.Fatalf("Name(%q, %q, %q) = %q: outside the grammar", ns, name, port, got)
		}
		if Name("fe", ns, name, port) != got {
			t.Fatal("two calls differ")
		}
		raw := "fe_" + ns + "_" + name + "_" + port
		clean := len(raw) <= MaxNameLen && strings.IndexFunc(ns+name+port, func(r rune) bool { return r > 127 || !NameByte(byte(r)) }) < 0
		if clean != (got == raw) {
			t.Fatalf("Name(%q, %q, %q) = %q: clean %v, but written as it is %v", ns, name, port, got, clean, got == raw)
		}
		other := Name("fe", ns2, name2, port)
		if clean && other == Name("fe", ns2, name2, port) && (ns2 != ns || name2 != name) && other == got {
			t.Fatalf("%q/%q and %q/%q share the name %q", ns, name, ns2, name2, got)
		}
	})
}

func TestAddrProblems(t *testing.T) {
	for _, tc := range []struct {
		addr           string
		server, listen bool
	}{
		{"192.0.2.1", true, true},
		{"2001:db8::1", true, true},
		{"::ffff:192.0.2.1", true, true},
		{"127.0.0.1", true, true},
		{"0.0.0.0", false, false},
		{"::", false, false},
		{"::ffff:0.0.0.0", false, false},
		{"255.255.255.255", false, false},
		{"224.0.0.1", false, false},
		{"ff02::1", false, false},
		{"169.254.1.1", true, false},
		{"fe80::1", true, false},
		{"fe80::1%eth0", false, false},
	} {
		a := netip.MustParseAddr(tc.addr)
		if got := ServerAddrProblem(a) == ""; got != tc.server {
			t.Errorf("%s: a server address %v, want %v (%s)", tc.addr, got, tc.server, ServerAddrProblem(a))
		}
		if got := ListenAddrProblem(a) == ""; got != tc.listen {
			t.Errorf("%s: a listen address %v, want %v (%s)", tc.addr, got, tc.listen, ListenAddrProblem(a))
		}
	}
	if ServerAddrProblem(netip.Addr{}) == "" {
		t.Error("the zero Addr is a server address")
	}
}

func TestValidPort(t *testing.T) {
	for p, want := range map[int32]bool{-80: false, 0: false, 1: true, 80: true, 65535: true, 65536: false, 70000: false} {
		if ValidPort(p) != want {
			t.Errorf("ValidPort(%d) = %v", p, !want)
		}
	}
}
