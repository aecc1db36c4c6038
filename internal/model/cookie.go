package model

import (
	"slices"
	"strings"
)

// CookieAffinity keeps each client on the server it first went to with a
// cookie HAProxy inserts (an Ingress's affinity: cookie): the backend's
// `cookie NAME insert indirect nocache`, each server slot's value its
// own name (render). It is structure: a backend with another setting is
// another backend.
type CookieAffinity struct {
	// Name is the cookie's name (ValidCookieName).
	Name string
	// MaxAge, when positive, makes the cookie persistent for this many
	// seconds (its Max-Age attribute); 0: a session cookie.
	MaxAge int
	// Secure sets the cookie's Secure attribute.
	Secure bool
	// SameSite is "", "Strict", "Lax" or "None".
	SameSite string
	// Path and Domain are the cookie's Path and Domain attributes ("":
	// none): ValidHTTPPath, and a host name (ValidSNI, no wildcard) with
	// an optional leading '.'.
	Path, Domain string `json:",omitempty"`
}

// MaxCookieAge bounds CookieAffinity.MaxAge (ten years).
const MaxCookieAge = 10 * 365 * 24 * 3600

// ValidCookieName reports whether n is a cookie name written as it is:
// letters, digits, '-' and '_', at most 64 bytes.
func ValidCookieName(n string) bool {
	if n == "" || len(n) > 64 {
		return false
	}
	for i := 0; i < len(n); i++ {
		c := n[i]
		if !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '-' || c == '_') {
			return false
		}
	}
	return true
}

// ValidCookieAffinity reports whether c may be rendered.
func ValidCookieAffinity(c *CookieAffinity) bool {
	return c != nil && ValidCookieName(c.Name) && c.MaxAge >= 0 && c.MaxAge <= MaxCookieAge &&
		slices.Contains([]string{"", "Strict", "Lax", "None"}, c.SameSite) &&
		(c.Path == "" || ValidHTTPPath(c.Path)) && (c.Domain == "" || ValidCookieDomain(c.Domain))
}

// ValidCookieDomain reports whether d may be a cookie's Domain: a host
// name (ValidSNI, no wildcard), with an optional leading '.'.
func ValidCookieDomain(d string) bool {
	h := strings.TrimPrefix(d, ".")
	return ValidSNI(h) && !strings.HasPrefix(h, "*")
}

// Equal compares two settings (nil: none).
func (c *CookieAffinity) Equal(d *CookieAffinity) bool {
	if c == nil || d == nil {
		return c == d
	}
	return *c == *d
}
