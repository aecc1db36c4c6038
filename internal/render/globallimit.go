package render

import (
	"crypto/sha256"
	"encoding/hex"
	"strconv"

	"github.com/haproxy-k8s-sync/haproxy-k8s-sync/internal/model"
)

// The requests per key and window (model.GlobalLimit: an Ingress's
// global-rate-limit*) as fixed rules of an HTTP frontend with access
// rules, counted in the frontend's own stick table, and entries of its
// access map, so that a limit is map data:
//
//   - "aK.g" the requests a key is served in a window, "aK.gw" the
//     window in seconds, "aK.gs" the counters' scope (16 hex digits of
//     the Scope's SHA-256: the actions of one Ingress count together),
//     "aK.gk" the key's template when it is not the client's address
//     (expanded by the Lua file's hks_gk, extauth.lua; without the Lua
//     file the client's address), "aK.gi" the id "rN" of the sources
//     never limited (a range set of the ranges map, httpaccess.go).
//
// A key's count in window N (date / window) is gpc0 of the table's entry
// "SCOPE|N|HASH" (HASH the key's xxh64); a request is refused (429, not
// counted) when last × (window − elapsed) + this × window ≥ limit ×
// window, last the count of window N−1 (table_gpc0: no entry is made
// for it), elapsed the seconds since window N began. The table keeps an
// entry two windows after its last request.

// limitStatus is the answer past a limit: ingress-nginx's
// global-rate-limit-status-code default.
const limitStatus = "429"

// writeGlobalLimitRead reads the action's limit (txn.gl) and its ignored
// sources' set (txn.gi), before the client's address is made a key of
// the ranges map (httpaccess.go).
func writeGlobalLimitRead(w func(...string), access string) {
	w("\thttp-request set-var(txn.gl) var(txn.act),concat(.g),map_str(" + access + "),add(0)")
	w("\thttp-request set-var(txn.gi) var(txn.act),concat(.gi),map_str(" + access + ") if { var(txn.gl) -m found }")
}

// writeGlobalLimit writes the counting rules; table is the frontend's
// name (its stick table), loaded says the Lua file is.
func writeGlobalLimit(w func(...string), access, ranges, table string, loaded bool) {
	const on = " if { var(txn.gl) -m found }"
	w("\thttp-request set-var-fmt(txn.k) \"%[var(txn.gi)]|%[var(txn.sf)]|%[var(txn.sx)]\" if { var(txn.gi) -m found }")
	w("\thttp-request unset-var(txn.gl) if { var(txn.gi) -m found } { var(txn.k),map_beg(" + ranges + ") -m found }")
	w("\thttp-request set-var(txn.gw) var(txn.act),concat(.gw),map_str(" + access + "),add(0)" + on)
	w("\thttp-request set-var(txn.gs) var(txn.act),concat(.gs),map_str(" + access + ")" + on)
	w("\thttp-request set-var(txn.gq) src" + on)
	if loaded {
		w("\thttp-request set-var(txn.gk) var(txn.act),concat(.gk),map_str(" + access + ")" + on)
		w("\thttp-request lua.hks_gk if { var(txn.gk) -m found }")
	}
	w("\thttp-request set-var(txn.gn) date,div(txn.gw)" + on)
	w("\thttp-request set-var-fmt(txn.gc) \"%[var(txn.gs)]|%[var(txn.gn)]|%[var(txn.gq),xxh64]\"" + on)
	w("\thttp-request set-var-fmt(txn.gp) \"%[var(txn.gs)]|%[var(txn.gn),sub(1)]|%[var(txn.gq),xxh64]\"" + on)
	w("\thttp-request track-sc1 var(txn.gc)" + on)
	w("\thttp-request set-var(txn.ge) var(txn.gp),table_gpc0(" + table + ")" + on)
	w("\thttp-request set-var(txn.gr) date,mod(txn.gw),neg,add(txn.gw),mul(txn.ge)" + on)
	w("\thttp-request set-var(txn.gt) sc_get_gpc0(1),mul(txn.gw),add(txn.gr)" + on)
	w("\thttp-request set-var(txn.gm) var(txn.gl),mul(txn.gw)" + on)
	w("\thttp-request return status " + limitStatus + on + " { var(txn.gt),sub(txn.gm) ge 0 }")
	w("\thttp-request sc-inc-gpc0(1)" + on)
}

// globalLimitEntries adds limit g's entries (its action's id idHole) to
// rel; a limit that is not valid (the ingress package refuses it before)
// adds none.
func globalLimitEntries(p *placer, rel map[string][]HTTPMapEntry, g *model.GlobalLimit) {
	if !model.ValidGlobalLimit(g) {
		return
	}
	sum := sha256.Sum256([]byte(g.Scope))
	rel[HTTPAccessMap] = append(rel[HTTPAccessMap],
		HTTPMapEntry{idHole + ".g", strconv.Itoa(int(g.Limit))},
		HTTPMapEntry{idHole + ".gw", strconv.Itoa(int(g.Window))},
		HTTPMapEntry{idHole + ".gs", hex.EncodeToString(sum[:8])})
	if g.Key != "" {
		rel[HTTPAccessMap] = append(rel[HTTPAccessMap], HTTPMapEntry{idHole + ".gk", g.Key})
	}
	set := map[string][]HTTPMapEntry{}
	for _, r := range g.Ignored {
		for _, k := range RangeKeys(r) {
			set[HTTPRanges] = append(set[HTTPRanges], HTTPMapEntry{idHole + "|" + k, r.String()})
		}
	}
	if len(set[HTTPRanges]) > 0 {
		rel[HTTPAccessMap] = append(rel[HTTPAccessMap], HTTPMapEntry{idHole + ".gi", p.place("r", set)})
	}
}

// globalLimitKey appends g's content to b (the memo's key of an action).
func globalLimitKey(b []byte, g *model.GlobalLimit) []byte {
	b = keyBool(b, g != nil)
	if g == nil {
		return b
	}
	b = keyString(keyString(keyInt(keyInt(b, int64(g.Limit)), int64(g.Window)), g.Key), g.Scope)
	b = keyInt(b, int64(len(g.Ignored)))
	for _, r := range g.Ignored {
		b = keyString(b, r.String())
	}
	return b
}
