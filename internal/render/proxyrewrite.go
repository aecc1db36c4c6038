package render

import (
	"encoding/base64"

	"github.com/haproxy-k8s-sync/haproxy-k8s-sync/internal/model"
)

// An action's answers rewritten (model.ProxyRewrite: an Ingress's
// proxy-redirect-* and proxy-cookie-*): the action's settings in the
// access map ("aK.o", base64 of ProxyRewrite.Spec), read on the request
// into txn.ao, and a fixed response rule running the Lua file's hks_rw
// (extauth.lua) when it was found. Map data: no reload. Written with the
// access rules; without the Lua file loaded nothing is rewritten.

// writeProxyRewrite writes the rules reading map access; loaded says the
// Lua file is.
func writeProxyRewrite(w func(...string), access string, loaded bool) {
	if !loaded {
		return
	}
	w("\thttp-request set-var(txn.ao) var(txn.act),concat(.o),map_str(" + access + "),b64dec")
	w("\thttp-response lua.hks_rw if { var(txn.ao) -m found }")
}

// proxyRewriteEntry adds action a's rewrite entry (its id idHole) to rel;
// settings that are not valid (the ingress package refuses them before)
// add none.
func proxyRewriteEntry(rel map[string][]HTTPMapEntry, a *model.HTTPAccess) {
	if a == nil || !model.ValidProxyRewrite(a.Rewrite) {
		return
	}
	rel[HTTPAccessMap] = append(rel[HTTPAccessMap], HTTPMapEntry{idHole + ".o", base64.StdEncoding.EncodeToString([]byte(a.Rewrite.Spec()))})
}

// proxyRewriteKey appends r's content to b (the memo's key of an action).
func proxyRewriteKey(b []byte, r *model.ProxyRewrite) []byte {
	b = keyBool(b, r != nil)
	if r == nil {
		return b
	}
	return keyString(b, r.Spec())
}
