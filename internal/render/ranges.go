package render

import (
	"bytes"
	"net/netip"
	"strings"

	"github.com/haproxy-k8s-sync/haproxy-k8s-sync/internal/model"
)

// Source ranges (model.Frontend.SourceRanges): one rule per restricted
// frontend that refuses a client outside the ranges of its own family.

// ACLFamily is the ending of a frontend's ACL file's name before ".acl"
// that tells its family (index 0 IPv4, 1 IPv6): FE_ipv4.acl, FE_ipv6.acl,
// in the local HAProxy's ACL directory and the Data Plane API's storage
// alike. Not ".ipv4": the Data Plane API v3.4.0 stores and lists a file
// with every character before the extension but [A-Za-z0-9_-] replaced by
// "_", so a dotted name would never be found again there.
var ACLFamily = [2]string{"_ipv4", "_ipv6"}

// ACLFileName is the name of frontend fe's ACL file of one family (IPv6
// when v6). Frontend names are made of DNS labels, digits and
// underscores, and an owned one ends in its port's digits, so the family
// cannot be part of it. (Releases before the ranges were checked per
// family wrote one file, FE.acl.)
func ACLFileName(fe string, v6 bool) string {
	if v6 {
		return fe + ACLFamily[1] + ".acl"
	}
	return fe + ACLFamily[0] + ".acl"
}

// ACLFile is ACLFileName under dir.
func ACLFile(dir, fe string, v6 bool) string { return dir + "/" + ACLFileName(fe, v6) }

// ACLFileContent is what ACLFile holds for f's family: ACLLines, one a
// line.
func ACLFileContent(f model.Frontend, v6 bool) []byte {
	var b bytes.Buffer
	for _, l := range ACLLines(f, v6) {
		b.WriteString(l)
		b.WriteByte('\n')
	}
	return b.Bytes()
}

// ACLLines are the patterns of f's ACL file of one family (IPv6 when v6):
// its prefixes of that family, or, when it has none, the one pattern
// that no client of the family matches (NoClient4, NoClient6). The file
// and the running list are never empty, so that neither driver depends
// on how an empty file or an empty replacement is taken (the Data Plane
// API's upload and runtime endpoints, not measured).
func ACLLines(f model.Frontend, v6 bool) []string {
	ps := f.RangesOf(v6)
	if len(ps) == 0 {
		if v6 {
			return []string{NoClient6}
		}
		return []string{NoClient4}
	}
	out := make([]string, len(ps))
	for i, p := range ps {
		out[i] = p.String()
	}
	return out
}

// NoClient4 and NoClient6 match no client of their family where the rule
// reads them (behind IPv4Client, or its negation). NoClient4 is an IPv6
// pattern: an IPv4 client meets it as ::ffff:a.b.c.d, which it is not,
// and an IPv4-mapped one is then tried against the file's IPv4 patterns,
// of which there are none. NoClient6 is the IPv4-mapped prefix, whose
// clients are IPv4 ones, checked against the other file; an IPv6 client
// HAProxy would read as IPv4 (IPv4-compatible, 6to4) finds no IPv4
// pattern either.
const (
	NoClient4 = "::/128"
	NoClient6 = "::ffff:0:0/96"
)

// sourceRule refuses the clients outside f's source ranges, each client
// checked against the ranges of its own family (model.Frontend.RangesOf;
// SourceCondition). Without the PROXY protocol it acts on the connection
// (before any byte is read); with it, on the session, once the header
// gave the client's address. The ranges come from parsed prefixes only.
// With an ACL directory they live in the frontend's two files, and the
// skeleton (the structure hash) has only the rule, naming both files
// whichever families have ranges, so that changing them needs no reload;
// inline, they are part of the structure.
func sourceRule(f model.Frontend, opts Options) string {
	stage := "connection"
	if f.AcceptProxy {
		stage = "session"
	}
	var in4, in6 string
	if opts.ACLDir != "" {
		in4, in6 = SrcFileTest(ACLFile(opts.ACLDir, f.Name, false)), SrcFileTest(ACLFile(opts.ACLDir, f.Name, true))
	} else {
		in4, in6 = SrcTest(f.RangesOf(false)), SrcTest(f.RangesOf(true))
	}
	return "tcp-request " + stage + " reject unless " + SourceCondition(in4, in6)
}

// IPv4Client is a condition that holds for an IPv4 client and for an
// IPv4-mapped IPv6 one (::ffff:a.b.c.d: a dual-stack socket's IPv4
// client, or a PROXY header's), and for no other. HAProxy matches an
// IPv4 address that misses a list's IPv4 patterns against its IPv6 ones
// as ::ffff:a.b.c.d, and an IPv6 address that misses the IPv6 patterns
// against the IPv4 ones when it is IPv4-mapped, IPv4-compatible
// (::a.b.c.d) or 6to4 (2002:a.b.c.d::/48) (measured on 2.6.12): so one
// list of both families lets ::/0 admit every IPv4 client, and 10.0.0.0/8
// the IPv6 client 2002:a00::1. A list of one family, behind this test,
// sees the clients of that family only.
const IPv4Client = "{ src ::ffff:0:0/96 }"

// SourceCondition is the condition a client of a restricted frontend
// meets when it is in the ranges of its family: in4 and in6 test the
// ranges of each family (SrcTest, SrcFileTest), "" for a family without
// any (none of its clients is let in).
func SourceCondition(in4, in6 string) string {
	var alts []string
	if in4 != "" {
		alts = append(alts, IPv4Client+" "+in4)
	}
	if in6 != "" {
		alts = append(alts, "!"+IPv4Client+" "+in6)
	}
	if len(alts) == 0 {
		return "FALSE"
	}
	return strings.Join(alts, " || ")
}

// SrcTest tests the client against ps, parsed prefixes of one family ("":
// none).
func SrcTest(ps []netip.Prefix) string {
	if len(ps) == 0 {
		return ""
	}
	var b strings.Builder
	b.WriteString("{ src")
	for _, p := range ps {
		b.WriteByte(' ')
		b.WriteString(p.String())
	}
	b.WriteString(" }")
	return b.String()
}

// SrcFileTest tests the client against the prefixes of the ACL file at
// path, a path HAProxy reads as one word.
func SrcFileTest(path string) string { return "{ src -f " + path + " }" }
