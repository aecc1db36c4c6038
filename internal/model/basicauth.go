package model

import (
	"encoding/base64"
	"slices"
	"strings"
)

// Basic authentication of an HTTP action (Ingress's auth-type: basic and
// auth-secret): who may use it, by the user and password of the
// request's Authorization header. Like the rest of the table it is map
// data (render/httpauth.go): the users are map entries keyed by their
// set and name, their passwords' SHA-1 digests the values HAProxy's
// converters compare, so a user added, changed or removed reloads
// nothing.

// BasicAuth admits a request whose Authorization header (Basic) names a
// user of Users with that user's password; any other is answered 401
// with WWW-Authenticate naming Realm. No Users: nobody is admitted (an
// auth set that could not be read fails closed).
type BasicAuth struct {
	// Realm is shown to the client (ValidRealm).
	Realm string
	// Users, sorted by Name, each once (ValidBasicUser).
	Users []BasicUser
}

// BasicUser is a user and the base64 of the SHA-1 digest of its password
// (an htpasswd {SHA} entry's hash).
type BasicUser struct {
	Name, SHA1 string
}

// ValidRealm reports whether r may be a realm: visible ASCII and spaces,
// no quote or backslash (it is written quoted into WWW-Authenticate), at
// most 256 bytes.
func ValidRealm(r string) bool {
	if len(r) > 256 {
		return false
	}
	for i := 0; i < len(r); i++ {
		if c := r[i]; c < ' ' || c >= 0x7f || c == '"' || c == '\\' {
			return false
		}
	}
	return true
}

// ValidBasicUser reports whether u may be written: a name of visible
// ASCII without ':' (Basic authentication's separator) nor what
// ValidHeaderValue keeps out of a map key, at most 256 bytes; a digest of
// 20 bytes in standard base64.
func ValidBasicUser(u BasicUser) bool {
	if u.Name == "" || len(u.Name) > 256 || strings.Contains(u.Name, ":") || !ValidHeaderValue(u.Name) {
		return false
	}
	b, err := base64.StdEncoding.Strict().DecodeString(u.SHA1)
	return err == nil && len(b) == 20
}

// basicAuthEqual reports whether two settings are the same.
func basicAuthEqual(a, b *BasicAuth) bool {
	if a == nil || b == nil {
		return a == b
	}
	return a.Realm == b.Realm && slices.Equal(a.Users, b.Users)
}
