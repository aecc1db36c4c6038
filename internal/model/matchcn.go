package model

import (
	"regexp/syntax"
	"strconv"
)

// An Ingress's auth-tls-match-cn (HTTPAccess.MatchCN): a regular
// expression searched for in the verified client certificate's subject
// DN in RFC 2253 form (CN=alice,O=Example: nginx's $ssl_client_s_dn); a
// request whose certificate's subject does not match, or that has none,
// is answered 403. It is map data (the access map's "aK.s", base64) read
// by a fixed rule and matched by the fixed Lua action hks_cn with
// HAProxy's own regex engine (render/extauth.lua), so adding, changing
// or removing it reloads nothing.

// maxMatchCN bounds a MatchCN expression.
const maxMatchCN = 512

// MatchCNProblem says what keeps re from being a MatchCN ("" when
// nothing does): visible ASCII and spaces, at most 512 bytes, a regular
// expression in the syntax both Go's and PCRE read alike (Perl's, with
// no backreferences, lookarounds or possessive quantifiers), with no
// repetition or alternation inside a repetition (such as (a+)+ or
// (a|aa)+, which can make a backtracking matcher such as PCRE take
// exponential time).
func MatchCNProblem(re string) string {
	if re == "" {
		return "empty"
	}
	if len(re) > maxMatchCN {
		return "longer than " + strconv.Itoa(maxMatchCN) + " bytes"
	}
	for i := 0; i < len(re); i++ {
		if c := re[i]; c < ' ' || c >= 0x7f {
			return "holds a character outside visible ASCII and space"
		}
	}
	t, err := syntax.Parse(re, syntax.Perl)
	if err != nil {
		return "not a regular expression: " + err.Error()
	}
	if nestedRepeat(t, false) {
		return "a repetition or alternation inside a repetition (such as (a+)+ or (a|aa)+) can make HAProxy's matcher take exponential time"
	}
	return ""
}

// nestedRepeat reports whether t repeats something that repeats,
// optional parts included, or that has alternatives (in is whether t is
// already inside a repetition).
func nestedRepeat(t *syntax.Regexp, in bool) bool {
	rep := false
	switch t.Op {
	case syntax.OpStar, syntax.OpPlus, syntax.OpQuest:
		rep = true
	case syntax.OpRepeat:
		rep = t.Max != 0 && t.Max != 1
	case syntax.OpAlternate:
		if in {
			return true
		}
	}
	if rep && in {
		return true
	}
	for _, s := range t.Sub {
		if nestedRepeat(s, in || rep) {
			return true
		}
	}
	return false
}
