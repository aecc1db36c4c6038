package model

import (
	"net/netip"
	"slices"
)

// Access control of an HTTP action (Ingress's source-range and body-size
// annotations): who the action serves, by the client's source address,
// and how large a request body it takes. Like the rest of
// the table it is map data (render/httpaccess.go): fixed rules answer 403
// from the ranges an action names, so an Ingress given, changed or
// relieved of a range reloads nothing.

// HTTPAccess restricts who an HTTPAction serves. A request whose source
// is in one of Deny is answered 403; else, when Allow is not empty, one
// whose source is in none of Allow is answered 403. A range of one
// family never takes a client of the other: an IPv6 range (an IPv4-mapped
// one too, unless written as IPv4) never opens or closes a route to an
// IPv4 client. The empty HTTPAccess restricts nothing.
type HTTPAccess struct {
	Allow, Deny []netip.Prefix // masked, valid
	// MaxBody is the largest request body served, in bytes (0: any): a
	// request whose Content-Length, or whose body as buffered, is
	// larger is answered 413.
	MaxBody int64
	// RPS limits each client (by source address) to RPS requests a
	// second on average over LimitWindow, in bursts of up to
	// RPS×LimitWindow; Conns to Conns requests at once. Beyond either:
	// 503. 0: no limit.
	RPS, Conns int32
	// RPM limits each client to RPM requests a minute on average over
	// LimitMinutes minutes, in bursts of up to RPM×LimitMinutes
	// (ingress-nginx's limit-rpm); beyond: 503, the refused requests not
	// counted. 0: no limit.
	RPM int32
	// Exempt are the sources RPS and Conns do not limit (an Ingress's
	// limit-whitelist): masked, valid.
	Exempt []netip.Prefix
	// Auth, when set, admits only the requests of its users
	// (basicauth.go): 401 for the others.
	Auth *BasicAuth
	// ExtAuth, when set, asks another server about each request first
	// (extauth.go): what it answers decides.
	ExtAuth *ExtAuth
	// ClientCert passes what the client's certificate says to the
	// backend in request headers (an Ingress's auth-tls-*, on a frontend
	// that terminates TLS: render/clientcert.go): ClientCertInfo the
	// verification result and the subject's and issuer's names,
	// ClientCertPass those and the certificate itself; 0 none. Not a
	// restriction: Empty ignores it.
	ClientCert uint8
	// NoLog leaves the action's requests out of HAProxy's per-request
	// log (an Ingress's enable-access-log: false). Not a restriction:
	// Empty ignores it.
	NoLog bool
	// MatchCN, when set, is searched for in the verified client
	// certificate's subject (matchcn.go: MatchCNProblem); a request whose
	// certificate's subject does not match, or without one, is answered
	// 403.
	MatchCN string
	// Rewrite, when set, rewrites the answers' Location, Refresh and
	// Set-Cookie headers (proxyrewrite.go). Not a restriction: Empty
	// ignores it.
	Rewrite *ProxyRewrite
	// Global, when set, limits the requests per key and window
	// (globallimit.go): 429 beyond it.
	Global *GlobalLimit
	// SatisfyAny admits a request that passes either the source ranges
	// (Allow and Deny) or the authentication (Auth, ExtAuth), not only
	// both (an Ingress's satisfy: any; nginx's satisfy any): a source
	// in the ranges is not asked to authenticate, one outside them is
	// asked instead of refused. Without both kinds it changes nothing.
	SatisfyAny bool
}

// Satisfied reports whether a's SatisfyAny changes anything: a has source
// ranges and authentication.
func (a *HTTPAccess) Satisfied() bool {
	return a != nil && a.SatisfyAny && (len(a.Allow) > 0 || len(a.Deny) > 0) && (a.Auth != nil || a.ExtAuth != nil)
}

// The values of HTTPAccess.ClientCert.
const (
	ClientCertInfo uint8 = 1
	ClientCertPass uint8 = 2
	// HAProxy Ingress's X-SSL-Client-CN, -DN and -SHA1; with
	// ClientCertHAPass (auth-tls-cert-header) X-SSL-Client-Cert too.
	ClientCertHAInfo uint8 = 3
	ClientCertHAPass uint8 = 4
)

// LimitWindow is the span, in seconds, over which HTTPAccess.RPS is
// averaged: ingress-nginx's default burst multiplier (a burst of 5×RPS).
const LimitWindow = 5

// LimitMinutes is the span, in minutes, over which HTTPAccess.RPM is
// averaged: ingress-nginx's default burst multiplier again.
const LimitMinutes = 5

// Empty reports whether a restricts nothing.
func (a *HTTPAccess) Empty() bool {
	return a == nil || (len(a.Allow) == 0 && len(a.Deny) == 0 && a.MaxBody <= 0 && a.RPS <= 0 && a.Conns <= 0 && a.RPM <= 0 && len(a.Exempt) == 0 && a.Auth == nil && a.ExtAuth == nil && a.MatchCN == "" && a.Global == nil)
}

// HasAccess reports whether the table's access rules are written: some
// action carries an HTTPAccess (an empty one declares them, so that the
// first range a route is given is map data, not structure).
func (h *HTTP) HasAccess() bool { return h.shapeOf().Access }

// hasAccess is HasAccess walked from the actions (ShapeOf).
func (h *HTTP) hasAccess() bool {
	return slices.ContainsFunc(h.Actions, func(a HTTPAction) bool { return a.Access != nil })
}

// accessEqual reports whether two actions' access controls are the same.
func accessEqual(a, b *HTTPAccess) bool {
	if a == nil || b == nil {
		return a == b
	}
	return slices.Equal(a.Allow, b.Allow) && slices.Equal(a.Deny, b.Deny) && a.MaxBody == b.MaxBody &&
		a.RPS == b.RPS && a.Conns == b.Conns && a.RPM == b.RPM && slices.Equal(a.Exempt, b.Exempt) && basicAuthEqual(a.Auth, b.Auth) &&
		extAuthEqual(a.ExtAuth, b.ExtAuth) &&
		a.ClientCert == b.ClientCert && a.NoLog == b.NoLog && a.MatchCN == b.MatchCN &&
		(a.Rewrite == nil) == (b.Rewrite == nil) && (a.Rewrite == nil || *a.Rewrite == *b.Rewrite) &&
		globalLimitEqual(a.Global, b.Global) && a.SatisfyAny == b.SatisfyAny
}
