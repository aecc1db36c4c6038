package render

import (
	"encoding/base64"

	"github.com/haproxy-k8s-sync/haproxy-k8s-sync/internal/model"
)

// Basic authentication (model.BasicAuth of an action's access) as fixed
// rules of an HTTP frontend with access (model.HTTP.HasAccess) and one
// map of its own, so that no user is structure:
//
//   - access: "aK.u" the id "uN" of the action's user set ("u-none": a
//     set that admits nobody), "aK.m" its realm in base64 (decoded into
//     WWW-Authenticate: a realm is never read as syntax).
//   - users (map_str): "uN|NAME" the base64 of the SHA-1 digest of the
//     user's password. The request's key is its set and the user name
//     HAProxy reads from the Authorization header (http_auth_user): the
//     set comes first and from the action, so no user name reaches
//     another set's entries. The password (http_auth_pass: everything
//     after the first ':', colons included) is digested by HAProxy's
//     sha1 and base64 converters and compared with strcmp.
//
// The rules come after the redirects (an HTTP request redirected to
// HTTPS is not asked for a password in clear first, as ingress-nginx's
// rewrite phase comes before its access phase) and the CORS preflight's
// answer (a preflight carries no credentials).

// HTTPUsers is the map kind of the basic authentication users.
const HTTPUsers = "users"

// noUsers is the id of a user set that admits nobody.
const noUsers = "u-none"

// writeHTTPAuth writes the authentication rules.
func writeHTTPAuth(w func(...string), h *model.HTTP, m func(string) string, dir string, tls bool) {
	if !h.HasAccess() {
		return
	}
	access, users := m(HTTPAccessMap), m(HTTPUsers)
	const on = " if { var(txn.au) -m found }"
	w("\thttp-request set-var(txn.au) var(txn.act),concat(.u),map_str(" + access + ")")
	// satisfy any: a source the ranges admit is not asked (httpaccess.go).
	w("\thttp-request unset-var(txn.au) if { var(txn.ay) -m found } !{ var(txn.af) -m found }")
	w("\thttp-request set-var-fmt(txn.k) \"%[var(txn.au)]|%[http_auth_user]\"" + on)
	w("\thttp-request set-var(txn.uh) var(txn.k),map_str(" + users + ")" + on)
	w("\thttp-request set-var(txn.up) http_auth_pass,sha1,base64 if { var(txn.uh) -m found }")
	w("\thttp-request set-var(txn.am) var(txn.act),concat(.m),map_str(" + access + ")" + on)
	w("\thttp-request return status 401 hdr www-authenticate \"Basic realm=\\\"%[var(txn.am),b64dec]\\\"\"" + on + " !{ var(txn.uh),strcmp(txn.up) eq 0 }")
	writeExtAuth(w, access, model.ValidFilePath(ExtAuthLuaFile(dir)), tls) // extauth.go
	writeProxyRewrite(w, access, model.ValidFilePath(ExtAuthLuaFile(dir))) // proxyrewrite.go
}

// authEntries adds action a's authentication entries (its id idHole) to
// rel, placing its user set under an id of its own (sets are named by
// their content: actions with the same users share one).
func authEntries(p *placer, rel map[string][]HTTPMapEntry, a *model.BasicAuth) {
	if a == nil {
		return
	}
	realm := a.Realm
	if !model.ValidRealm(realm) {
		realm = ""
	}
	rel[HTTPAccessMap] = append(rel[HTTPAccessMap], HTTPMapEntry{idHole + ".m", base64.StdEncoding.EncodeToString([]byte(realm))})
	set := map[string][]HTTPMapEntry{}
	for _, u := range a.Users {
		if model.ValidBasicUser(u) {
			set[HTTPUsers] = append(set[HTTPUsers], HTTPMapEntry{idHole + "|" + u.Name, u.SHA1})
		}
	}
	id := noUsers
	if len(set[HTTPUsers]) > 0 {
		id = p.place("u", set)
	}
	rel[HTTPAccessMap] = append(rel[HTTPAccessMap], HTTPMapEntry{idHole + ".u", id})
}

// authKey appends a's content to b (the memo's key of an action).
func authKey(b []byte, a *model.BasicAuth) []byte {
	b = keyBool(b, a != nil)
	if a == nil {
		return b
	}
	b = keyString(b, a.Realm)
	b = keyInt(b, int64(len(a.Users)))
	for _, u := range a.Users {
		b = keyString(keyString(b, u.Name), u.SHA1)
	}
	return b
}
