package model

import (
	"strings"
	"testing"
)

func TestMatchCNProblem(t *testing.T) {
	for _, tc := range []struct {
		re, want string // want: a part of the problem, "" for none
	}{
		{"CN=alice", ""},
		{"CN=(alice|bob)", ""},
		{"^CN=client[0-9]+,O=Example$", ""},
		{`CN=.*\.example\.com`, ""},
		{"(?i)cn=Alice", ""},
		{"", "empty"},
		{"CN=(alice", "not a regular expression"},
		{`CN=(a)\1`, "not a regular expression"}, // a backreference
		{"CN=(?=a)", "not a regular expression"}, // a lookahead
		{"(a+)+$", "exponential"},
		{"(a|aa)+$", "exponential"},
		{"(a?){20}", "exponential"},
		{"(x{2,})*", "exponential"},
		{"CN=a\nb", "visible ASCII"},
		{"CN=é", "visible ASCII"},
		{strings.Repeat("a", 513), "longer"},
	} {
		got := MatchCNProblem(tc.re)
		if (tc.want == "") != (got == "") || !strings.Contains(got, tc.want) {
			t.Errorf("MatchCNProblem(%.40q) = %q, want %q", tc.re, got, tc.want)
		}
	}
}
