package render

import (
	"strconv"
	"strings"

	"github.com/haproxy-k8s-sync/haproxy-k8s-sync/internal/model"
)

// The extended HTTP features (model/httpext.go) as fixed rules of an
// HTTP frontend and entries of two maps of its own, so that none of it
// is structure but the header names changed:
//
//   - rewrite (map_str): "aK.p" the action's path (a rewrite, or its
//     redirect's path): "full|PATH" for the whole path, or "N|PREFIX" for
//     the first N segments of the path replaced by PREFIX (without its
//     trailing "/"); "aK.h" the Host header a rewrite sets.
//   - timeouts (map_str_int): "aK" the action's server timeout in ms,
//     which every HTTP backend sets for the request (set-timeout is a
//     backend's keyword); "aK.c" its connect timeout in ms, looked up
//     and set only with Options.ConnectPerRequest (HAProxy 3.4+).
//
// Query parameter matches are names of the match map's sets
// (model.QueryMatch + name, url_param); response header changes and a
// backend's own request header changes are entries of the headers map
// (keys "aK.rs.NAME", "aK.ra.NAME", "aK.rd.NAME"; "aK.bJ.s.NAME" ...),
// the chosen backend's entry of the backends map carrying "|aK.bJ" when
// its backendRef changes headers.

// HTTPMap kinds of the extended features.
const (
	HTTPRewrite   = "rewrite"
	HTTPTimeouts  = "timeouts"
	HTTPListeners = "listeners"
)

// httpTimeoutVar is the variable an HTTP frontend leaves the request's
// server timeout in (ms) for the backend to set.
const httpTimeoutVar = "txn.tmo"

// httpConnectVar is the variable an HTTP frontend leaves the request's
// connect timeout in (ms), with Options.ConnectPerRequest.
const httpConnectVar = "txn.ctmo"

// matchFetch is what a match name of a header set reads from the
// request: a header's last value, the method, a query parameter, or
// a cookie's first value.
func matchFetch(n string) string {
	switch {
	case n == model.MethodMatch:
		return "%[method]"
	case strings.HasPrefix(n, model.QueryMatch):
		return "%[url_param(" + strings.TrimPrefix(n, model.QueryMatch) + ")]"
	case strings.HasPrefix(n, model.CookieMatch):
		return "%[req.cook(" + strings.TrimPrefix(n, model.CookieMatch) + ")]"
	}
	return "%[req.fhdr(" + n + ")]"
}

// validMatchName reports whether n may be a name of a header set.
func validMatchName(n string) bool {
	if q, ok := strings.CutPrefix(n, model.QueryMatch); ok {
		return model.ValidQueryName(q)
	}
	if c, ok := strings.CutPrefix(n, model.CookieMatch); ok {
		return model.ValidCookieName(c)
	}
	return n == model.MethodMatch || model.ValidHeaderName(n)
}

// writeHTTPPath computes the action's new path (txn.np) from its rewrite
// entry (txn.pm), for its redirect or its rewrite: the whole path, or
// the first N segments replaced, N = 0..RewriteDepth (one fixed rule
// each: field() takes a constant index).
func writeHTTPPath(w func(...string), rewriteMap string) {
	w("\thttp-request set-var(txn.pm) var(txn.act),concat(.p),map_str(" + rewriteMap + ")")
	const full = "{ var(txn.pm),field(1,|) -m str full }"
	w("\thttp-request set-var(txn.np) var(txn.pm),field(2,|) if " + full)
	for n := 0; n <= model.RewriteDepth; n++ {
		w("\thttp-request set-var(txn.rest) path,field(" + strconv.Itoa(n+2) + ",/,0) if { var(txn.pm),field(1,|) -m str " + strconv.Itoa(n) + " }")
	}
	const prefix = "{ var(txn.pm) -m found } !" + full
	w("\thttp-request set-var-fmt(txn.np) \"%[var(txn.pm),field(2,|)]/%[var(txn.rest)]\" if " + prefix + " { var(txn.rest) -m found }")
	w("\thttp-request set-var(txn.np) var(txn.pm),field(2,|) if " + prefix + " !{ var(txn.rest) -m found }")
	w("\thttp-request set-var(txn.np) str(/) if { var(txn.np) -m len 0 }")
	// A redirect's path and query: the new path keeps the query.
	w("\thttp-request set-var(txn.rp) pathq")
	w("\thttp-request set-var(txn.rp) var(txn.np) if { var(txn.np) -m found }")
	w("\thttp-request set-var-fmt(txn.rp) \"%[var(txn.np)]?%[query]\" if { var(txn.np) -m found } { query -m found }")
}

// writeHTTPHeaders writes the request header changes of names, looked up
// under the id in variable id (an action's, or a backend's of it).
func writeHTTPHeaders(w func(...string), names []string, id, headersMap string) {
	for _, n := range names {
		if !model.ValidHeaderName(n) {
			continue
		}
		for _, op := range []struct{ verb, tag string }{{"set-header", ".s."}, {"add-header", ".a."}} {
			look := "var(" + id + "),concat(" + op.tag + n + "),map_str(" + headersMap + ")"
			w("\thttp-request " + op.verb + " " + n + " %[" + look + "] if { " + look + " -m found }")
		}
		w("\thttp-request del-header " + n + " if { var(" + id + "),concat(.d." + n + "),map_str(" + headersMap + ") -m found }")
	}
}

// writeHTTPExt writes the rewrites, the timeout and the response header
// changes of the chosen action (after its request header changes).
func writeHTTPExt(w func(...string), h *model.HTTP, m func(string) string, connect bool) {
	writeHTTPHeaders(w, h.BackendHeaders(), "txn.bh", m(HTTPHeaders))
	host := "var(txn.act),concat(.h),map_str(" + m(HTTPRewrite) + ")"
	w("\thttp-request set-header host %[" + host + "] if { " + host + " -m found }")
	w("\thttp-request set-path %[var(txn.np)] if { var(txn.np) -m found }")
	w("\thttp-request set-var(" + httpTimeoutVar + ") var(txn.act),map_str_int(" + m(HTTPTimeouts) + ")")
	if connect {
		w("\thttp-request set-var(" + httpConnectVar + ") var(txn.act),concat(.c),map_str_int(" + m(HTTPTimeouts) + ")")
	}
	for _, n := range h.ResponseHeaders() {
		if !model.ValidHeaderName(n) {
			continue
		}
		for _, op := range []struct{ verb, tag string }{{"set-header", ".rs."}, {"add-header", ".ra."}} {
			look := "var(txn.act),concat(" + op.tag + n + "),map_str(" + m(HTTPHeaders) + ")"
			w("\thttp-response " + op.verb + " " + n + " %[" + look + "] if { " + look + " -m found }")
		}
		w("\thttp-response del-header " + n + " if { var(txn.act),concat(.rd." + n + "),map_str(" + m(HTTPHeaders) + ") -m found }")
	}
}

// httpBackendTimeout is the rule of every HTTP backend that applies the
// timeout its frontend chose for the request.
const httpBackendTimeout = "\thttp-request set-timeout server var(" + httpTimeoutVar + ") if { var(" + httpTimeoutVar + ") -m found }"

// httpBackendConnect is the rule of every HTTP backend that applies the
// connect timeout its frontend chose for the request
// (Options.ConnectPerRequest: HAProxy 3.4+ only).
const httpBackendConnect = "\thttp-request set-timeout connect var(" + httpConnectVar + ") if { var(" + httpConnectVar + ") -m found }"

// extEntries adds the entries of action a's extended features (id aid):
// its rewrites, timeout and response header changes; the backends'
// own header changes are added by backendHeaderEntries.
func extEntries(out map[string][]HTTPMapEntry, aid string, a model.HTTPAction) {
	x := a.Ext
	if x == nil {
		return
	}
	if p := x.Path; p != nil && model.ValidHTTPPath(p.Replace) {
		switch {
		case !p.Prefix:
			out[HTTPRewrite] = append(out[HTTPRewrite], HTTPMapEntry{aid + ".p", "full|" + p.Replace})
		case p.Strip >= 0 && p.Strip <= model.RewriteDepth:
			out[HTTPRewrite] = append(out[HTTPRewrite], HTTPMapEntry{aid + ".p", strconv.Itoa(p.Strip) + "|" + strings.TrimRight(p.Replace, "/")})
		}
	}
	if a.Redirect != nil {
		return
	}
	if x.Host != "" && model.ValidSNI(x.Host) && !strings.HasPrefix(x.Host, "*") {
		out[HTTPRewrite] = append(out[HTTPRewrite], HTTPMapEntry{aid + ".h", x.Host})
	}
	if ms := x.Timeout.Milliseconds(); ms > 0 {
		out[HTTPTimeouts] = append(out[HTTPTimeouts], HTTPMapEntry{aid, strconv.FormatInt(ms, 10)})
	}
	if ms := x.Connect.Milliseconds(); ms > 0 {
		out[HTTPTimeouts] = append(out[HTTPTimeouts], HTTPMapEntry{aid + ".c", strconv.FormatInt(ms, 10)})
	}
	headerEntries(out, aid, ".r", x.Response)
	corsEntries(out, aid, x.CORS) // cors.go
}

// headerEntries adds the entries of header changes m under id + tag
// ("" for a request's: ".s.", ".a.", ".d."; ".r" for a response's).
func headerEntries(out map[string][]HTTPMapEntry, id, tag string, m model.HeaderMods) {
	seen := map[string]bool{}
	hdr := func(t, name, value string) {
		k := id + tag + t + name
		if model.ValidHeaderName(name) && model.ValidHeaderSetValue(value) && value != "" && !seen[k] {
			seen[k] = true
			out[HTTPHeaders] = append(out[HTTPHeaders], HTTPMapEntry{k, value})
		}
	}
	if tag == "" {
		tag = "."
	}
	for _, v := range m.Set {
		hdr("s.", v.Name, v.Value)
	}
	for _, v := range m.Add {
		hdr("a.", v.Name, v.Value)
	}
	for _, n := range m.Remove {
		hdr("d.", n, "1")
	}
}

// backendTag is what action aid's backend i adds to its backends map
// value ("|aK.bI"), with its header changes' entries, when it has some.
func backendTag(out map[string][]HTTPMapEntry, aid string, a model.HTTPAction, i int) string {
	if a.Ext == nil || i >= len(a.Ext.BackendMods) || a.Ext.BackendMods[i].Empty() {
		return ""
	}
	id := aid + ".b" + strconv.Itoa(i)
	headerEntries(out, id, "", a.Ext.BackendMods[i])
	return "|" + id
}

// httpH2CServers makes an HTTP backend's servers speak HTTP/2 in clear
// (model.Backend.H2C); the frontends take h2c with prior knowledge on
// their own (HAProxy recognises the preface on a clear bind).
const httpH2CServers = "\tdefault-server proto h2"

// writeHostLookup looks the host in variable src up in a map of host
// names (exact, then "*." + the host less one leading label, two, ...,
// then AnyHost) into variable dst, only if cond holds ("" always).
func writeHostLookup(w func(...string), src, dst, mapFile, cond string) {
	first := "\thttp-request set-var(" + dst + ") var(" + src + "),map_str(" + mapFile + ")"
	if cond != "" {
		first += " if" + cond
	}
	w(first)
	missing := " if !{ var(" + dst + ") -m found }" + cond
	for i := 2; i < 2+WildcardDepth; i++ {
		w("\thttp-request set-var-fmt(txn.lw) \"*.%[var(" + src + "),field(" + strconv.Itoa(i) + ",.,0)]\"" + missing)
		w("\thttp-request set-var(" + dst + ") var(txn.lw),map_str(" + mapFile + ")" + missing)
	}
	w("\thttp-request set-var(" + dst + ") str(" + model.AnyHost + "),map_str(" + mapFile + ")" + missing)
}

// writeMisdirected answers 421 a request on a TLS frontend whose Host
// picks another listener (by the listeners map: their hostnames) than
// its connection's server name does, or none while the server name
// picked one (GatewayHTTPSListenerDetectMisdirectedRequests). A
// connection without a server name, or whose name no listener takes,
// is not checked.
func writeMisdirected(w func(...string), listenersMap string) {
	writeMisdirectedBy(w, listenersMap, writeHostLookup)
}

// writeMisdirectedBy is writeMisdirected with the host lookups of lookup
// (the fixed HTTPS listener's are keyed: httpslistener.go).
func writeMisdirectedBy(w func(...string), listenersMap string, lookup func(w func(...string), src, dst, mapFile, cond string)) {
	lookup(w, "txn.host", "txn.lh", listenersMap, "")
	w("\thttp-request set-var(txn.sni) ssl_fc_sni,lower")
	lookup(w, "txn.sni", "txn.ls", listenersMap, " { var(txn.sni) -m found }")
	w("\thttp-request return status 421 if { var(txn.ls) -m found } !{ var(txn.lh) -m found }")
	w("\thttp-request return status 421 if { var(txn.ls) -m found } { var(txn.lh) -m found } !{ var(txn.ls),strcmp(txn.lh) eq 0 }")
}

// listenerEntries are the listeners map's entries: each listener
// hostname (ValidSNI, or AnyHost) and its id "lN".
func listenerEntries(out map[string][]HTTPMapEntry, hosts []string) {
	for i, h := range hosts {
		// "KEY|host" in the fixed HTTPS listener's table (httpslistener.go)
		if _, n, ok := listenerHost(h); ok && (n == model.AnyHost || model.ValidSNI(n)) {
			out[HTTPListeners] = append(out[HTTPListeners], HTTPMapEntry{h, "l" + strconv.Itoa(i)})
		}
	}
}
