package model

import (
	"regexp"
	"slices"
	"strings"
)

// CORS is an action's cross-origin resource sharing policy (Gateway
// API's HTTPRoute CORS filter, the Ingress cors annotations): a request
// whose Origin is allowed gets the Access-Control-* response headers, and
// a preflight (OPTIONS with Origin and Access-Control-Request-Method) is
// answered by HAProxy itself, allowed or not, never by the backend. All
// of it is map data (render/cors.go).
type CORS struct {
	// Origins are the allowed origins, each ValidCORSOrigin: lower case
	// "scheme://host[:port]", a host of "*" (any host of the scheme) or
	// "*." + a suffix (one label or more before it), or AnyOrigin alone.
	Origins []string
	// Credentials adds Access-Control-Allow-Credentials: true.
	Credentials bool
	// Methods are the allowed methods (ValidMethod), or Wildcard alone:
	// the preflight's requested method is echoed.
	Methods []string
	// Headers are the allowed request headers (ValidHeaderName), or
	// Wildcard alone: the preflight's requested headers are echoed.
	Headers []string
	// Expose are the response headers exposed (ValidHeaderName), or
	// Wildcard alone.
	Expose []string
	// MaxAge is how long (seconds) a client may keep a preflight's
	// answer; 0: no header.
	MaxAge int
}

// AnyOrigin allows every origin; Wildcard every method or header.
const (
	AnyOrigin = "*"
	Wildcard  = "*"
)

// MaxCORSAge bounds CORS.MaxAge (a year; ingress-nginx's default is 20
// days, browsers keep an answer a few hours at most).
const MaxCORSAge = 31536000

// corsOrigin is an origin of CORS.Origins.
var corsOrigin = regexp.MustCompile(`^https?://(\*|(\*\.)?[a-z0-9]([a-z0-9-]*[a-z0-9])?(\.[a-z0-9]([a-z0-9-]*[a-z0-9])?)*)(:[0-9]{1,5})?$`)

// ValidCORSOrigin reports whether o may be an origin of CORS.Origins: it
// becomes a map key, so nothing but a scheme, a host name (lower case,
// optionally after "*.") or "*", and a port.
func ValidCORSOrigin(o string) bool {
	return o == AnyOrigin || (len(o) <= 253 && corsOrigin.MatchString(o))
}

// Valid reports why c cannot be written ("" when it can).
func (c *CORS) Valid() string {
	if len(c.Origins) == 0 {
		return "no allowed origin"
	}
	for _, o := range c.Origins {
		if !ValidCORSOrigin(o) {
			return "origin " + o + " is not scheme://host[:port] (lower case; a host may start with *.)"
		}
	}
	if len(c.Origins) > 1 && slices.Contains(c.Origins, AnyOrigin) {
		return "origin * cannot be given with other origins"
	}
	for _, m := range c.Methods {
		if m != Wildcard && !ValidMethod(m) {
			return "method " + m + " is not an upper-case token"
		}
	}
	for _, list := range [][]string{c.Methods, c.Headers, c.Expose} {
		if len(list) > 1 && slices.Contains(list, Wildcard) {
			return "* cannot be given with other values"
		}
	}
	for _, h := range slices.Concat(c.Headers, c.Expose) {
		if h != Wildcard && !ValidHeaderName(h) {
			return "header name " + h + " is not a lower-case token"
		}
	}
	if c.MaxAge < 0 || c.MaxAge > MaxCORSAge {
		return "max age is not 0..31536000 seconds"
	}
	return ""
}

// Equal reports whether c and d are the same policy.
func (c *CORS) Equal(d *CORS) bool {
	if c == nil || d == nil {
		return c == d
	}
	return slices.Equal(c.Origins, d.Origins) && c.Credentials == d.Credentials && slices.Equal(c.Methods, d.Methods) &&
		slices.Equal(c.Headers, d.Headers) && slices.Equal(c.Expose, d.Expose) && c.MaxAge == d.MaxAge
}

// JoinList is a list of CORS values as one header value (no space: it
// is a map value).
func JoinList(l []string) string { return strings.Join(l, ",") }
