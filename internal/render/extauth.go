package render

import (
	_ "embed" // the Lua action, extauth.lua
	"encoding/base64"
	"slices"

	"github.com/haproxy-k8s-sync/haproxy-k8s-sync/internal/model"
)

// External authentication (model.ExtAuth of an action's access): one
// fixed Lua file (extauth.lua, written by the driver beside the maps and
// loaded by lua-load in the global section, structure written once) and
// two fixed rules of an HTTP frontend with access: the action's settings
// are read from the access map ("aK.x": model.ExtAuth.Spec in base64,
// decoded into a variable, so no value is read as syntax) and, for an
// action that has them, the Lua action hks_auth asks the auth server and
// answers or lets the request go on. Without the Lua file (no valid map
// directory path for it), such a request is answered 500: never served
// unasked.

// ExtAuthLua is the Lua file's content.
//
//go:embed extauth.lua
var ExtAuthLua []byte

// ExtAuthLuaFile is the Lua file's path in the map directory dir.
func ExtAuthLuaFile(dir string) string { return dir + "/extauth.lua" }

// ExtAuthFrontend is the internal frontend that sends the Lua action's
// requests for a cluster Service (model.ExtAuth.Backend) to its backend,
// named by the header ExtAuthHeader the Lua action sets; it listens on a
// unix socket beside the Lua file (ExtAuthSocket), which only processes
// of the host reach, so no client names a backend.
const (
	ExtAuthFrontend = "_extauth"
	ExtAuthHeader   = "x-hks-auth-backend"
)

// ExtAuthSocket is the internal frontend's socket in dir ("" when the
// path is too long for a unix socket: such requests are then answered
// 500 by the Lua action, which cannot connect).
func ExtAuthSocket(dir string) string {
	if p := dir + "/extauth.sock"; len(p) <= maxUnixPath {
		return p
	}
	return ""
}

// maxUnixPath is the longest unix socket path written (Linux's sun_path
// holds 108 bytes; HAProxy's reload renames it with a suffix).
const maxUnixPath = 90

// writeExtAuthFrontend writes the internal frontend when the Lua file is
// loaded.
func writeExtAuthFrontend(w func(...string), cfg model.Config, opts Options) {
	sock := ExtAuthSocket(opts.ACLDir)
	if sock == "" || !ExtAuthLoaded(cfg, opts) {
		return
	}
	w("")
	w("frontend", ExtAuthFrontend)
	w("	mode http")
	w("	bind unix@" + sock + " mode 600")
	w("	timeout client 10s")
	w("	http-request set-var(txn.eb) req.hdr(" + ExtAuthHeader + ")")
	w("	http-request del-header " + ExtAuthHeader)
	w("	use_backend %[var(txn.eb)] if { var(txn.eb) -m found }")
}

// ExtAuthLoaded reports whether the config rendered from cfg with opts
// loads the Lua file: some HTTP frontend writes the access rules and its
// path is one HAProxy reads.
func ExtAuthLoaded(cfg model.Config, opts Options) bool {
	if opts.ACLDir == "" || !model.ValidFilePath(ExtAuthLuaFile(opts.ACLDir)) {
		return false
	}
	return slices.ContainsFunc(cfg.Frontends, func(f model.Frontend) bool {
		return f.HTTP != nil && f.HTTP.HasAccess() && !opts.Listened(f)
	})
}

// writeExtAuth writes the client certificate subject's match
// (model.HTTPAccess.MatchCN) and the external authentication rules (with
// the access rules: h.HasAccess) reading map access; loaded says the Lua
// file is, tls that the frontend terminates TLS (elsewhere there is no
// client certificate, and a request of an action with MatchCN is answered
// 403).
func writeExtAuth(w func(...string), access string, loaded, tls bool) {
	const cn = " if { var(txn.an) -m found }"
	w("\thttp-request set-var(txn.an) var(txn.act),concat(.s),map_str(" + access + "),b64dec")
	if tls {
		w("\thttp-request set-var(txn.dn) ssl_c_s_dn(,0,rfc2253)" + cn + " { ssl_c_used }")
	}
	if !loaded || !tls {
		w("\thttp-request return status 403" + cn)
	} else {
		w("\thttp-request lua.hks_cn" + cn)
	}
	const on = " if { var(txn.ax) -m found }"
	w("\thttp-request set-var(txn.ax) var(txn.act),concat(.x),map_str(" + access + "),b64dec")
	w("\thttp-request unset-var(txn.ax) if { var(txn.ay) -m found } !{ var(txn.af) -m found }") // satisfy any
	if !loaded {
		w("\thttp-request return status 500" + on)
		return
	}
	w("\thttp-request lua.hks_auth" + on)
}

// extAuthEntries adds action a's external authentication entry (its id
// idHole) to rel. Settings that are not valid (the ingress package
// refuses them before) are an entry the Lua action answers 500: the
// action is never served unasked.
func extAuthEntries(rel map[string][]HTTPMapEntry, a *model.ExtAuth) {
	if a == nil {
		return
	}
	spec := "-"
	if model.ValidExtAuth(a) {
		spec = a.Spec()
	}
	rel[HTTPAccessMap] = append(rel[HTTPAccessMap], HTTPMapEntry{idHole + ".x", base64.StdEncoding.EncodeToString([]byte(spec))})
}

// matchCNEntry adds action a's client certificate subject match
// ("aK.s": MatchCN in base64). One that is not valid (the ingress package
// refuses it before) is "(", which does not compile: every request of
// the action is answered 403.
func matchCNEntry(rel map[string][]HTTPMapEntry, a *model.HTTPAccess) {
	if a == nil || a.MatchCN == "" {
		return
	}
	re := a.MatchCN
	if model.MatchCNProblem(re) != "" {
		re = "("
	}
	rel[HTTPAccessMap] = append(rel[HTTPAccessMap], HTTPMapEntry{idHole + ".s", base64.StdEncoding.EncodeToString([]byte(re))})
}

// extAuthKey appends a's content to b (the memo's key of an action).
func extAuthKey(b []byte, a *model.ExtAuth) []byte {
	b = keyBool(b, a != nil)
	if a == nil {
		return b
	}
	return keyString(b, a.Spec())
}
