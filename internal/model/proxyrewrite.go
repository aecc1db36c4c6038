package model

import "strings"

// A proxied answer's headers rewritten on their way to the client (an
// Ingress's proxy-redirect-from/-to and proxy-cookie-domain/-path,
// nginx's proxy_redirect and proxy_cookie_*): by the fixed Lua file's
// response action (render/extauth.lua hks_rw), run by a fixed rule for
// the actions whose access map entry holds settings, so it is map data:
// given, changed or removed, it reloads nothing.

// ProxyRewrite is what an action's answers have rewritten. An empty pair
// rewrites nothing.
type ProxyRewrite struct {
	// RedirectFrom, RedirectTo: a Location header (and a Refresh
	// header's url=) beginning with RedirectFrom (case-sensitive) has
	// that beginning replaced by RedirectTo.
	RedirectFrom, RedirectTo string
	// CookieDomainFrom, CookieDomainTo: a Set-Cookie's Domain attribute
	// equal to CookieDomainFrom (case-insensitive; a leading '.' of either
	// ignored) becomes CookieDomainTo.
	CookieDomainFrom, CookieDomainTo string
	// CookiePathFrom, CookiePathTo: a Set-Cookie's Path attribute
	// beginning with CookiePathFrom (case-sensitive) has that beginning
	// replaced by CookiePathTo.
	CookiePathFrom, CookiePathTo string
}

// maxRewriteValue bounds each of ProxyRewrite's strings.
const maxRewriteValue = 1024

// ValidRewriteValue reports whether v may be a string of ProxyRewrite:
// visible ASCII without whitespace, quotes, '\\', ';' or ',' (a
// header's attribute and list separators), at most 1024 bytes.
func ValidRewriteValue(v string) bool {
	if v == "" || len(v) > maxRewriteValue {
		return false
	}
	for i := 0; i < len(v); i++ {
		if c := v[i]; c <= ' ' || c >= 0x7f || strings.IndexByte("\"'\\;,", c) >= 0 {
			return false
		}
	}
	return true
}

// ValidProxyRewrite reports whether r may be written: each pair both set
// (ValidRewriteValue) or both empty, and one pair set.
func ValidProxyRewrite(r *ProxyRewrite) bool {
	if r == nil || r.Empty() {
		return false
	}
	for _, p := range [][2]string{{r.RedirectFrom, r.RedirectTo}, {r.CookieDomainFrom, r.CookieDomainTo}, {r.CookiePathFrom, r.CookiePathTo}} {
		if (p[0] == "") != (p[1] == "") || (p[0] != "" && (!ValidRewriteValue(p[0]) || !ValidRewriteValue(p[1]))) {
			return false
		}
	}
	return true
}

// Empty reports whether r rewrites nothing.
func (r *ProxyRewrite) Empty() bool {
	return r == nil || *r == ProxyRewrite{}
}

// Spec is r's settings as the Lua action reads them: six lines, the
// pairs in the order of the struct (empty lines for a pair not set).
func (r *ProxyRewrite) Spec() string {
	return strings.Join([]string{r.RedirectFrom, r.RedirectTo, r.CookieDomainFrom, r.CookieDomainTo, r.CookiePathFrom, r.CookiePathTo}, "\n")
}
