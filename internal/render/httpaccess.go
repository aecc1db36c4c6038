package render

import (
	"encoding/hex"
	"net/netip"
	"strconv"
	"strings"

	"github.com/haproxy-k8s-sync/haproxy-k8s-sync/internal/model"
)

// Access control (model.HTTPAccess) as fixed rules of an HTTP frontend
// and two maps of its own, written when the table has access
// (model.HTTP.HasAccess), so that no range is structure:
//
//   - access (map_str): "aK.d" the id "rN" of the action's denied ranges,
//     "aK.a" that of its allowed ranges, "aK.b" its largest body in bytes,
//     "aK.r" the requests a client may send in model.LimitWindow, "aK.c"
//     at once, "aK.l" in model.LimitMinutes (limit-rpm), "aK.n" present when the action's requests are not logged,
//     "aK.o" the rewrite of its answers' headers (proxyrewrite.go), "aK.g*"
//     its requests per key and window (globallimit.go), "aK.y" present
//     when a request passing either the ranges or the authentication is
//     served (satisfy any: model.HTTPAccess.Satisfied).
//   - ranges (map_beg): a range set's ranges, each as "rN|F|HEX": F the
//     family (4 or 6), HEX the range's leading address bits as upper-case
//     hex digits; a range whose length is not a multiple of four is the
//     two, four or eight digit strings that together take it. The
//     request's key is "rN|F|" and the hex digits of its whole source
//     address, so map_beg finds an entry exactly when the source is in a
//     range of the set. An IPv4 client an IPv6 socket gave as
//     ::ffff:a.b.c.d is read as IPv4 (family 4): a range of one family
//     never takes a client of the other.
//
// The set's id is named by its ranges (httpids.go): routes with the same
// ranges share one set of entries.

// HTTPMap kinds of access control.
const (
	HTTPAccessMap = "access"
	HTTPRanges    = "ranges"
)

// writeHTTPAccess writes the access rules, after the action (txn.act) is
// chosen and before anything answers for it: deny first, then allow. A
// source of neither family (a UNIX socket) is refused by both. table is
// the frontend's name (its stick table), loaded says the Lua file is.
func writeHTTPAccess(w func(...string), h *model.HTTP, m func(string) string, table string, loaded bool) {
	if !h.HasAccess() {
		return
	}
	access, ranges := m(HTTPAccessMap), m(HTTPRanges)
	// First, so that what answers below is not logged either.
	w("\thttp-request set-log-level silent if { var(txn.act),concat(.n),map_str(" + access + ") -m found }")
	w("\thttp-request set-var(txn.ad) var(txn.act),concat(.d),map_str(" + access + ")")
	w("\thttp-request set-var(txn.aa) var(txn.act),concat(.a),map_str(" + access + ")")
	w("\thttp-request set-var(txn.aw) var(txn.act),concat(.w),map_str(" + access + ")")
	writeGlobalLimitRead(w, access) // globallimit.go
	const either = " if { var(txn.ad) -m found } or { var(txn.aa) -m found } or { var(txn.aw) -m found } or { var(txn.gi) -m found }"
	w("\thttp-request set-var(txn.sx) src,hex" + either)
	w("\thttp-request set-var(txn.sx) src,bytes(12),hex if { var(txn.sx) -m len 32 } { var(txn.sx) -m beg 00000000000000000000FFFF }")
	w("\thttp-request set-var(txn.sf) str(4) if { var(txn.sx) -m len 8 }")
	w("\thttp-request set-var(txn.sf) str(6) if { var(txn.sx) -m len 32 }")
	// A source the ranges refuse (txn.af): 403, unless the action is
	// satisfied by its authentication instead ("aK.y": satisfy any,
	// httpauth.go asks it then).
	w("\thttp-request set-var(txn.af) str(1) if { var(txn.ad) -m found } !{ var(txn.sf) -m found }")
	w("\thttp-request set-var(txn.af) str(1) if { var(txn.aa) -m found } !{ var(txn.sf) -m found }")
	for _, c := range []struct{ v, deny string }{{"txn.ad", ""}, {"txn.aa", "!"}} {
		w("\thttp-request set-var-fmt(txn.k) \"%[var(" + c.v + ")]|%[var(txn.sf)]|%[var(txn.sx)]\" if { var(" + c.v + ") -m found }")
		w("\thttp-request set-var(txn.af) str(1) if { var(" + c.v + ") -m found } " + c.deny + "{ var(txn.k),map_beg(" + ranges + ") -m found }")
	}
	w("\thttp-request set-var(txn.ay) var(txn.act),concat(.y),map_str(" + access + ")")
	w("\thttp-request return status 403 if { var(txn.af) -m found } !{ var(txn.ay) -m found }")
	// The body's size: its Content-Length, or (chunked) what the
	// frontend buffered (option http-buffer-request: the whole body up to
	// the buffer's size).
	w("\thttp-request set-var(txn.ab) var(txn.act),concat(.b),map_str(" + access + ")")
	w("\thttp-request return status 413 if { var(txn.ab) -m found } { req.hdr(content-length),sub(txn.ab) gt 0 }")
	w("\thttp-request return status 413 if { var(txn.ab) -m found } { req.body_size,sub(txn.ab) gt 0 }")
	// Rate and concurrency per client and action: the frontend's own
	// stick table, keyed "aK|SOURCE", counter 2 (conn_cur counts the
	// requests tracking the key at once, this one included).
	// gpc0 counts the requests limit-rpm served (gpc0_rate over
	// model.LimitMinutes), and on counter 1 those a global limit's key
	// served in a window (gpc0, globallimit.go), so the table keeps a key
	// the longer of twice those spans.
	expire := max(2*60*model.LimitMinutes, 2*model.MaxGlobalWindow)
	w("\tstick-table type string len 64 size 100k expire " + strconv.Itoa(expire) + "s store http_req_rate(" + strconv.Itoa(model.LimitWindow) + "s),conn_cur,gpc0,gpc0_rate(" + strconv.Itoa(60*model.LimitMinutes) + "s)")
	w("\thttp-request set-var(txn.lr) var(txn.act),concat(.r),map_str(" + access + ")")
	w("\thttp-request set-var(txn.lc) var(txn.act),concat(.c),map_str(" + access + ")")
	w("\thttp-request set-var(txn.lm) var(txn.act),concat(.l),map_str(" + access + ")")
	// Sources the limits exempt (txn.lx): a range set of their own.
	w("\thttp-request set-var-fmt(txn.k) \"%[var(txn.aw)]|%[var(txn.sf)]|%[var(txn.sx)]\" if { var(txn.aw) -m found }")
	w("\thttp-request set-var(txn.lx) str(1) if { var(txn.aw) -m found } { var(txn.k),map_beg(" + ranges + ") -m found }")
	w("\thttp-request set-var-fmt(txn.lk) \"%[var(txn.act)]|%[src]\" if !{ var(txn.lx) -m found } { var(txn.lr) -m found } or !{ var(txn.lx) -m found } { var(txn.lc) -m found } or !{ var(txn.lx) -m found } { var(txn.lm) -m found }")
	w("\thttp-request track-sc2 var(txn.lk) if { var(txn.lk) -m found }")
	w("\thttp-request return status 503 if { var(txn.lk) -m found } { var(txn.lr) -m found } { sc_http_req_rate(2),sub(txn.lr) gt 0 }")
	w("\thttp-request return status 503 if { var(txn.lk) -m found } { var(txn.lc) -m found } { sc_conn_cur(2),sub(txn.lc) gt 0 }")
	// limit-rpm: refused once the requests served reach the limit; only
	// the ones served count.
	w("\thttp-request return status 503 if { var(txn.lk) -m found } { var(txn.lm) -m found } { sc_gpc0_rate(2),sub(txn.lm) ge 0 }")
	w("\thttp-request sc-inc-gpc0(2) if { var(txn.lk) -m found } { var(txn.lm) -m found }")
	writeGlobalLimit(w, access, ranges, table, loaded) // globallimit.go
}

// accessEntries adds action a's access entries (its id idHole) to rel,
// placing each range set under an id of its own.
func accessEntries(p *placer, rel map[string][]HTTPMapEntry, a *model.HTTPAccess) {
	clientCertEntry(rel, a) // clientcert.go
	if a != nil && a.NoLog {
		rel[HTTPAccessMap] = append(rel[HTTPAccessMap], HTTPMapEntry{idHole + ".n", "1"})
	}
	matchCNEntry(rel, a)      // extauth.go
	proxyRewriteEntry(rel, a) // proxyrewrite.go
	if a.Empty() {
		return
	}
	if a.Satisfied() {
		rel[HTTPAccessMap] = append(rel[HTTPAccessMap], HTTPMapEntry{idHole + ".y", "1"})
	}
	if a.MaxBody > 0 {
		rel[HTTPAccessMap] = append(rel[HTTPAccessMap], HTTPMapEntry{idHole + ".b", strconv.FormatInt(a.MaxBody, 10)})
	}
	if a.RPS > 0 {
		rel[HTTPAccessMap] = append(rel[HTTPAccessMap], HTTPMapEntry{idHole + ".r", strconv.FormatInt(int64(a.RPS)*model.LimitWindow, 10)})
	}
	if a.RPM > 0 {
		rel[HTTPAccessMap] = append(rel[HTTPAccessMap], HTTPMapEntry{idHole + ".l", strconv.FormatInt(int64(a.RPM)*model.LimitMinutes, 10)})
	}
	if a.Conns > 0 {
		rel[HTTPAccessMap] = append(rel[HTTPAccessMap], HTTPMapEntry{idHole + ".c", strconv.Itoa(int(a.Conns))})
	}
	for _, s := range []struct {
		tag    string
		ranges []netip.Prefix
	}{{".d", a.Deny}, {".a", a.Allow}, {".w", a.Exempt}} {
		if len(s.ranges) == 0 {
			continue
		}
		set := map[string][]HTTPMapEntry{}
		for _, r := range s.ranges {
			for _, k := range RangeKeys(r) {
				set[HTTPRanges] = append(set[HTTPRanges], HTTPMapEntry{idHole + "|" + k, r.String()})
			}
		}
		if len(set[HTTPRanges]) == 0 {
			// Only ranges that are not valid: for an allow list that
			// refuses every source (an id with no entries), for a deny
			// list or the limits' exempt sources none.
			if s.tag != ".a" {
				continue
			}
			rel[HTTPAccessMap] = append(rel[HTTPAccessMap], HTTPMapEntry{idHole + s.tag, "r-none"})
			continue
		}
		rel[HTTPAccessMap] = append(rel[HTTPAccessMap], HTTPMapEntry{idHole + s.tag, p.place("r", set)})
	}
	globalLimitEntries(p, rel, a.Global) // globallimit.go
	authEntries(p, rel, a.Auth)          // httpauth.go
	extAuthEntries(rel, a.ExtAuth)       // extauth.go
}

// RangeKeys are the keys of range r in a ranges map without the set's id:
// "F|HEX", one, or two, four or eight when r's length is not a multiple
// of four; none for a range that is not valid. An IPv4-mapped IPv6 range
// of at least 96 bits is its IPv4 range.
func RangeKeys(r netip.Prefix) []string {
	if !r.IsValid() {
		return nil
	}
	r = r.Masked()
	if a := r.Addr(); a.Is4In6() && r.Bits() >= 96 {
		r = netip.PrefixFrom(a.Unmap(), r.Bits()-96)
	}
	fam := "6|"
	if r.Addr().Is4() {
		fam = "4|"
	}
	digits := strings.ToUpper(hex.EncodeToString(r.Addr().AsSlice()))
	full, rest := r.Bits()/4, r.Bits()%4
	if rest == 0 {
		return []string{fam + digits[:full]}
	}
	const hexDigits = "0123456789ABCDEF"
	d := strings.IndexByte(hexDigits, digits[full])
	n := 1 << (4 - rest)
	out := make([]string, 0, n)
	for i := 0; i < n; i++ {
		out = append(out, fam+digits[:full]+string(hexDigits[d+i]))
	}
	return out
}

// accessKey appends a's content to b (the memo's key of an action).
func accessKey(b []byte, a *model.HTTPAccess) []byte {
	b = keyBool(b, a != nil)
	if a == nil {
		return b
	}
	for _, rs := range [][]netip.Prefix{a.Allow, a.Deny, a.Exempt} {
		b = keyInt(b, int64(len(rs)))
		for _, r := range rs {
			b = keyString(b, r.String())
		}
	}
	b = keyBool(keyBool(b, a.NoLog), a.SatisfyAny)
	b = keyString(b, a.MatchCN)
	b = proxyRewriteKey(b, a.Rewrite) // proxyrewrite.go
	b = globalLimitKey(b, a.Global)   // globallimit.go
	return extAuthKey(authKey(keyInt(keyInt(keyInt(keyInt(keyInt(b, a.MaxBody), int64(a.RPS)), int64(a.Conns)), int64(a.RPM)), int64(a.ClientCert)), a.Auth), a.ExtAuth)
}
