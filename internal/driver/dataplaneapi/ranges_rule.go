package dataplaneapi

import (
	"net/netip"
	"strings"

	"github.com/haproxy-k8s-sync/haproxy-k8s-sync/internal/model"
	"github.com/haproxy-k8s-sync/haproxy-k8s-sync/internal/render"
)

// sourceRanges sets the rule of a frontend with source ranges: a client
// outside them is refused at connection time, before a byte is read.
// With the PROXY protocol, the client is the one its header names, which
// the content stage sees (not the connection stage). Not the session
// stage: the API v3.4.0 reads "tcp-request session reject" back as
// "accept" (measured), so a read, compared or written back, would be
// wrong. The ranges are in the frontend's file (syncACLFiles); without
// one (never, once a pass has synced the files) they are inline.
func (d *Driver) sourceRanges(base Object, f model.Frontend) {
	ownedLists(base)
	if !f.Restricted() {
		return
	}
	stage := "connection"
	if f.AcceptProxy {
		stage = "content"
	}
	p4, p6 := d.acl.paths[aclName(f.Name, false)], d.acl.paths[aclName(f.Name, true)]
	var test string
	if validACLPath(p4) && validACLPath(p6) {
		test = render.SourceCondition(render.SrcFileTest(p4), render.SrcFileTest(p6))
	} else {
		test = render.SourceCondition(render.SrcTest(f.RangesOf(false)), render.SrcTest(f.RangesOf(true)))
	}
	base["tcp_request_rule_list"] = []any{map[string]any{"type": stage, "action": "reject", "cond": "unless", "cond_test": test}}
}

// sourceCondition is a rule's cond_test when it is one sourceRanges
// writes, made again from what it parsed (files at checked paths,
// prefixes of the right family), or false.
func sourceCondition(test string) (string, bool) {
	var tests [2]string
	seen := [2]bool{}
	for _, alt := range strings.Split(test, " || ") {
		v6 := strings.HasPrefix(alt, "!")
		inner, ok := strings.CutPrefix(strings.TrimPrefix(alt, "!"), render.IPv4Client+" ")
		if !ok || seen[fam(v6)] {
			return "", false
		}
		seen[fam(v6)] = true
		if tests[fam(v6)], ok = srcTestOf(inner, v6); !ok {
			return "", false
		}
	}
	return render.SourceCondition(tests[0], tests[1]), true
}

// srcTestOf is "{ src -f PATH }" or "{ src P... }" (prefixes of one
// family) made again from what it parsed, or false.
func srcTestOf(s string, v6 bool) (string, bool) {
	inner, ok := strings.CutPrefix(s, "{ src ")
	if inner, ok = strings.CutSuffix(inner, " }"); !ok {
		return "", false
	}
	if path, ok := strings.CutPrefix(inner, "-f "); ok {
		return render.SrcFileTest(path), validACLPath(path)
	}
	var ps []netip.Prefix
	for _, f := range strings.Split(inner, " ") {
		p, err := netip.ParsePrefix(f)
		if err != nil || p.Addr().Is4() == v6 || p.Addr().Zone() != "" {
			return "", false
		}
		ps = append(ps, p)
	}
	return render.SrcTest(ps), true
}
