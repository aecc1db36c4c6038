package model

import (
	"strings"
	"testing"
)

func TestValidHTTPText(t *testing.T) {
	for _, c := range []struct {
		in                string
		path, name, value bool
	}{
		{"/", true, false, true},
		{"/a/b-c_d.e~f", true, false, true},
		{"/%2Fx", true, false, false},
		{"/a:b@c!$&()*+,=", true, false, true},
		{"version", false, true, true},
		{"x-forwarded-for", false, true, true},
		{"Upper", false, false, true},
		{"a,b=c", false, false, true},
		{"", false, false, true},
		{"/a b", false, false, false},
		{"/a;b", false, false, false},
		{"/a#b", false, false, false},
		{"/a'b", false, false, false},
		{"/a\\b", false, false, false},
		{"/a%zz", false, false, false},
		{"a|b", false, false, false},
		{"a%b", false, false, false},
		{"a\"b", false, false, false},
		{"a\nb", false, false, false},
		{"a\tb", false, false, false},
		{"a\x7fb", false, false, false},
		{"a:b", false, false, true},
	} {
		if got := ValidHTTPPath(c.in); got != c.path {
			t.Errorf("ValidHTTPPath(%q) = %v", c.in, got)
		}
		if got := ValidHeaderName(c.in); got != c.name {
			t.Errorf("ValidHeaderName(%q) = %v", c.in, got)
		}
		if got := ValidHeaderValue(c.in); got != c.value {
			t.Errorf("ValidHeaderValue(%q) = %v", c.in, got)
		}
	}
}

func TestHeaderSets(t *testing.T) {
	h := &HTTP{Hosts: []HTTPHost{{Name: "a", Rules: []HTTPRule{
		{Headers: []HeaderMatch{{Name: "b", Value: "1"}, {Name: "a", Value: "2"}}},
		{},
		{Headers: []HeaderMatch{{Name: "a", Value: "3"}, {Name: "b", Value: "4"}}},
		{Headers: []HeaderMatch{{Name: "c", Value: "5"}}},
	}}}}
	got := ShapeOf(h).HeaderSets
	if len(got) != 3 || len(got[0]) != 0 || got[1][0] != "a" || got[1][1] != "b" || got[2][0] != "c" {
		t.Fatalf("HeaderSets = %q", got)
	}
}

func TestValidHeaderSetValue(t *testing.T) {
	for _, c := range []struct {
		in string
		ok bool
	}{
		{"max-age=31536000; includeSubDomains", true},
		{"default-src 'self'", true},
		{`a "quoted" value`, true},
		{"two  spaces", true},
		{"plain", true},
		{"", true}, // emptiness is the callers' check
		{" lead", false},
		{"trail ", false},
		{"a\tb", false},
		{"a\nb", false},
		{"a\rb", false},
		{"a\x00b", false},
		{"a\x7fb", false},
		{"caf\xc3\xa9", false},
		{"100%", false},
		{"%[src]", false},
		{"a#b", false},
		{`a\ b`, false},
		{`a\;b`, false},
		{"a|b", false},
		{strings.Repeat("a", 1025), false},
	} {
		if got := ValidHeaderSetValue(c.in); got != c.ok {
			t.Errorf("ValidHeaderSetValue(%q) = %v", c.in, got)
		}
	}
}

// TestOneLabel: an Ingress's wildcard is the table's one-label "+." name;
// any other host as it is; ValidHTTPHost takes what render writes.
func TestOneLabel(t *testing.T) {
	for _, c := range []struct {
		in, want string
		valid    bool
	}{
		{"*.foo.com", "+.foo.com", true},
		{"foo.bar.com", "foo.bar.com", true},
		{AnyHost, AnyHost, true},
		{"*.", "+.", false},
		{"*.a b", "+.a b", false},
		{"*.*.foo.com", "+.*.foo.com", false},
	} {
		got := OneLabel(c.in)
		if got != c.want {
			t.Errorf("OneLabel(%q) = %q, want %q", c.in, got, c.want)
		}
		if v := ValidHTTPHost(got); v != c.valid {
			t.Errorf("ValidHTTPHost(%q) = %v, want %v", got, v, c.valid)
		}
	}
	if ValidHTTPHost("+.+.foo.com") || ValidHTTPHost("+foo.com") {
		t.Error("a malformed one-label wildcard taken")
	}
}
