package render

import (
	"slices"
	"strconv"

	"github.com/haproxy-k8s-sync/haproxy-k8s-sync/internal/model"
)

// HTTP frontends (model.Frontend.HTTP) route every request by FIXED rules
// that read map files (httpmaps.go): which host, path, headers and
// action a request takes is data, changed through the Runtime API with
// no reload. Only the header names the table matches on or modifies are
// rules of their own (structure). The rules, in order:
//
//  1. host: the Host header without its port, lower case, looked up
//     exactly, then the host less its first label in the one-label
//     wildcards' map (model.OneLabelPrefix: an Ingress's; HTTPOneLabel,
//     keyed by the suffix), then as "*." + the
//     host less its first label, less two, ... (WildcardDepth times: the
//     longest wildcard first), then AnyHost; the value is the host's id "hN".
//  2. path: "hN" + path looked up exactly (Exact, and every PathPrefix
//     that takes that path), else "hN" + path + "/" by the longest
//     prefix (map_beg: a prefix tree), a prefix being written with one
//     "/" after it, so /foo takes /foo and /foo/bar but not /foobar; the
//     value is a group of candidate rules "pN".
//  3. match: for each set of header names some rule matches on (the
//     empty set first), "pN|mI|" + the headers' values joined by "|"
//     looked up; the value is "RANK:aK", and the lowest rank found wins
//     (the rule's place in its host's Rules: the producer's precedence).
//  4. no rule: 404. Then the action aK: a redirect, else its header
//     changes, then a backend by weight: "aK:" + a random number of
//     10000..19999, by the longest prefix; "_reject" or none: 500.

// WildcardDepth is how many leading labels a request's host may have
// before a wildcard's suffix: "*.example.com" takes a.example.com down to
// a.b.c.d.e.f.g.h.example.com.
const WildcardDepth = 8

// httpLogFormat is the per-request log line of HTTP frontends: client,
// time, frontend, backend/server, timers, status, bytes, termination
// state, connections, method, host and path.
const httpLogFormat = `"%ci:%cp [%tr] %ft %b/%s %TR/%Tw/%Tc/%Tr/%Ta %ST %B %tsc %ac/%fc/%bc/%sc/%rc %HM %{+Q}[var(txn.host)] %{+Q}HP"`

// HTTPMap kinds: the map files of an HTTP frontend (HTTPMapFile).
const (
	HTTPHosts = "hosts"
	// HTTPOneLabel holds the one-label wildcards (model.OneLabelPrefix, an
	// Ingress's "*.x") by their suffix "x": a map of their own, so a
	// request that no exact host takes looks them up in it (empty, at no
	// cost to speak of, while no Ingress has a wildcard host) by a suffix
	// the rule already has, with no key to format.
	HTTPOneLabel = "onelabel"
	HTTPExact    = "exact"
	HTTPPrefix   = "prefix"
	HTTPMatch    = "match"
	HTTPBackends = "backends"
	HTTPRedirect = "redirect"
	HTTPHeaders  = "headers"
)

// HTTPMapKinds are the kinds, in the order the driver updates them.
var HTTPMapKinds = []string{HTTPRanges, HTTPUsers, HTTPAccessMap, HTTPBackends, HTTPRedirect, HTTPHeaders, HTTPRewrite, HTTPTimeouts, HTTPCORS, HTTPListeners, HTTPPass, HTTPMatch, HTTPExact, HTTPPrefix, HTTPOneLabel, HTTPHosts}

// HTTPMapFile is the map of kind of HTTP frontend fe under dir.
func HTTPMapFile(dir, fe, kind string) string {
	return dir + "/" + fe + ".http." + kind + ".map"
}

// writeHTTP writes the rules of an HTTP frontend (after its binds).
// Without a map directory nothing can be looked up: every request is
// answered 503. connect: the action's connect timeout is looked up too
// (Options.ConnectPerRequest).
func writeHTTP(w func(...string), f model.Frontend, dir string, connect bool) {
	h := f.HTTP
	w("\tmode http")
	w("\tlog stdout format raw local0 info")
	w("\tlog-format", httpLogFormat)
	w("\toption http-buffer-request")
	w("\ttimeout http-request 10s")
	if dir == "" {
		w("\thttp-request return status 503")
		return
	}
	m := func(kind string) string { return HTTPMapFile(dir, f.Name, kind) }
	w("\thttp-request set-var(txn.host) req.hdr(host),field(1,:),lower")
	if f.TLS != nil {
		if f.Name == HTTPSListenerFrontend {
			writeKeyedMisdirected(w, m(HTTPListeners)) // httpslistener.go
		} else {
			writeMisdirected(w, m(HTTPListeners)) // httpext.go
		}
		if mf, imf := ClientAuthMapFile(dir), IssuerMapFile(dir); model.ValidFilePath(mf) && model.ValidFilePath(imf) {
			writeHostClientAuth(w, mf, imf) // hostauth.go (the fixed HTTPS listener's lines verify for their frontends: mergeCerts)
		}
	}
	if f.Name == HTTPListenerFrontend || f.Name == HTTPSListenerFrontend {
		writeKeyedHosts(w, m(HTTPHosts), m(HTTPOneLabel)) // httplistener.go
	} else {
		w("\thttp-request set-var(txn.hid) var(txn.host),map_str(" + m(HTTPHosts) + ")")
		w("\thttp-request set-var(txn.hid) var(txn.host),field(2,.,0),map_str(" + m(HTTPOneLabel) + ")" + hidMissing)
		for i := 2; i < 2+WildcardDepth; i++ {
			w("\thttp-request set-var-fmt(txn.hw) \"*.%[var(txn.host),field(" + strconv.Itoa(i) + ",.,0)]\"" + hidMissing)
			w("\thttp-request set-var(txn.hid) var(txn.hw),map_str(" + m(HTTPHosts) + ")" + hidMissing)
		}
		w("\thttp-request set-var(txn.hid) str(" + model.AnyHost + "),map_str(" + m(HTTPHosts) + ")" + hidMissing)
	}
	w("\thttp-request set-var-fmt(txn.k) \"%[var(txn.hid)]%[path]\" if { var(txn.hid) -m found }")
	w("\thttp-request set-var(txn.p) var(txn.k),map_str(" + m(HTTPExact) + ") if { var(txn.hid) -m found }")
	w("\thttp-request set-var-fmt(txn.k) \"%[var(txn.hid)]%[path]/\" if { var(txn.hid) -m found } !{ var(txn.p) -m found }")
	w("\thttp-request set-var(txn.p) var(txn.k),map_beg(" + m(HTTPPrefix) + ") if { var(txn.hid) -m found } !{ var(txn.p) -m found }")
	for i, set := range h.HeaderSets() {
		c := "txn.c" + strconv.Itoa(i)
		key := "%[var(txn.p)]|m" + strconv.Itoa(i) + "|"
		if !slices.ContainsFunc(set, func(n string) bool { return !validMatchName(n) }) {
			for j, n := range set {
				if j > 0 {
					key += "|"
				}
				key += matchFetch(n) // httpext.go
			}
		}
		w("\thttp-request set-var-fmt(txn.k) \"" + key + "\" if { var(txn.p) -m found }")
		w("\thttp-request set-var(" + c + ") var(txn.k),map_str(" + m(HTTPMatch) + ") if { var(txn.p) -m found }")
		if i == 0 {
			w("\thttp-request set-var(txn.best) var(" + c + ") if { var(" + c + ") -m found }")
			continue
		}
		w("\thttp-request set-var(txn.rank) var(txn.best),field(1,:),add(0) if { var(txn.best) -m found }")
		w("\thttp-request set-var(txn.best) var(" + c + ") if { var(" + c + ") -m found } !{ var(txn.best) -m found }")
		w("\thttp-request set-var(txn.best) var(" + c + ") if { var(" + c + ") -m found } { var(" + c + "),field(1,:),sub(txn.rank) lt 0 }")
	}
	w("\thttp-request return status 404 if !{ var(txn.best) -m found }")
	w("\thttp-request set-var(txn.act) var(txn.best),field(2,:)")
	writeHTTPAccess(w, h, m, f.Name, model.ValidFilePath(ExtAuthLuaFile(dir))) // httpaccess.go
	writeCORS(w, m(HTTPCORS))                                                  // cors.go
	w("\thttp-request set-var(txn.rd) var(txn.act),map_str(" + m(HTTPRedirect) + ")")
	w("\thttp-request set-var(txn.rh) var(txn.rd),field(3,|) if { var(txn.rd) -m found }")
	w("\thttp-request set-var(txn.rh) var(txn.host) if { var(txn.rd) -m found } { var(txn.rh) -m len 0 }")
	writeHTTPPath(w, m(HTTPRewrite)) // httpext.go
	// A redirect entry's fifth field: its path and query lose one '/' at
	// their end (model.Redirect.StripSlash).
	w("\thttp-request set-var(txn.rp) var(txn.rp),regsub('/$',) if { var(txn.rd),field(5,|) -m str " + redirectStrip + " } { var(txn.rp) -m end / }")
	for _, code := range model.RedirectCodes {
		c := strconv.Itoa(code)
		w("\thttp-request redirect location \"%[var(txn.rd),field(2,|)]://%[var(txn.rh)]%[var(txn.rd),field(4,|)]%[var(txn.rp)]\" code " + c +
			" if { var(txn.rd),field(1,|) -m str " + c + " }")
	}
	writeHTTPAuth(w, h, m, dir, f.TLS != nil) // httpauth.go
	// The backend first: its backendRef's own header changes follow the
	// rule's (the value is "BACKEND" or "BACKEND|aK.bJ", httpext.go).
	w("\thttp-request set-var-fmt(txn.k) \"%[var(txn.act)]:%[rand(" + strconv.Itoa(httpPick) + "),add(" + strconv.Itoa(httpPick) + ")]\"")
	w("\thttp-request set-var(txn.be) var(txn.k),map_beg(" + m(HTTPBackends) + ")")
	w("\thttp-request return status 500 if !{ var(txn.be) -m found }")
	w("\thttp-request set-var(txn.bh) var(txn.be),field(2,|)")
	w("\thttp-request set-var(txn.be) var(txn.be),field(1,|)")
	w("\thttp-request return status 500 if { var(txn.be) -m str " + model.RejectBackend + " }")
	writeHTTPHeaders(w, h.ModifiedHeaders(), "txn.act", m(HTTPHeaders))
	writeHTTPExt(w, h, m, connect)
	if f.TLS != nil && h.HasAccess() {
		writeClientCertHeaders(w, m(HTTPAccessMap)) // clientcert.go
	}
	writeCORSResponse(w) // cors.go
	w("\tuse_backend %[var(txn.be)]")
}

// hidMissing conditions a host lookup on no host found before it.
const hidMissing = " if !{ var(txn.hid) -m found }"

// redirectStrip is a redirect map entry's fifth field when the redirect
// drops a trailing '/' (model.Redirect.StripSlash).
const redirectStrip = "s"

// httpPick is the range of an HTTP request's random number that weights
// cut: 10000 (a share moves by at most 0.01% by rounding), written as
// 10000..19999 so every number has five digits.
const httpPick = 10000
