package model

import (
	"net"
	"net/url"
	"slices"
	"strconv"
	"strings"
)

// External authentication of an HTTP action (an Ingress's auth-url): each
// request is first asked of another server, whose answer decides (2xx:
// served, with some of its response headers passed on; 401 and 403:
// answered so; anything else: 500). HAProxy asks from Lua (its
// httpclient: render/extauth.lua), run by a fixed rule for the actions
// whose map entry names an ExtAuth, so it is map data: adding, changing
// or removing it reloads nothing.

// ExtAuth is where and how a request is asked about.
type ExtAuth struct {
	// Method of the request to URL: one of ExtAuthMethods.
	Method string
	// URL is asked (ExtAuthURLProblem: http or https, a host, no user
	// information or fragment).
	URL string
	// Headers of the auth server's 2xx answer set on the request (the
	// client's own copies removed), sorted: each a ValidHeaderName (lower
	// case), the answer's header of that name, or NAME:SOURCE, header
	// NAME set from the answer's header SOURCE (HAProxy Ingress's
	// oauth-headers renames: ValidExtAuthHeader).
	Headers []string
	// SignIn, when set, is where a 401 is redirected (302), with rd= the
	// original URL (ExtAuthURLProblem too, or a path on the request's own
	// host: signInProblem).
	SignIn string
	// Backend, when set, is the HAProxy backend of the cluster Service
	// URL names (ValidBackendName): the request goes through HAProxy's
	// internal frontend (render/extauth.go) to that backend's servers,
	// with no DNS. "": to URL's host, as HAProxy resolves it.
	Backend string
	// Send, when set, are the request headers sent to URL: header name
	// patterns (ValidHeaderPattern), ExtAuthNone alone for none. nil:
	// every header (ingress-nginx's, and HAProxy Ingress's default).
	Send []string
	// Pass are header name patterns of the auth server's 2xx answer: each
	// header matching one is set on the request (replacing the client's
	// of that name), beside Headers (HAProxy Ingress's
	// auth-headers-succeed). The message's framing headers never pass.
	Pass []string
	// Fail, when set, makes an answer that is not 2xx reach the client as
	// it is: its status, body and the headers matching these patterns;
	// ExtAuthNone alone: 403 for any answer that is not 2xx (HAProxy
	// Ingress's auth-headers-fail). nil: 401 and 403 answered, anything
	// else 500 (ingress-nginx's). No answer at all (a timeout) is 500
	// either way; a refused connection is HAProxy's httpclient's own 503.
	Fail []string
	// SignInAny makes SignIn where every request not admitted (any answer
	// that is not 2xx, or none) is redirected, the URL as written (HAProxy
	// Ingress's auth-signin); false: a 401 only, with rd= the original URL
	// added (ingress-nginx's).
	SignInAny bool
}

// ExtAuthNone, alone in ExtAuth.Send or Fail, names no header.
const ExtAuthNone = "-"

// ExtAuthSameMethod as ExtAuth.Method asks with the client's own method
// (one of ExtAuthMethods; any other is answered 500).
const ExtAuthSameMethod = "*"

// maxHeaderPattern bounds a header name pattern.
const maxHeaderPattern = 128

// ValidHeaderPattern reports whether p may be a header name pattern of
// ExtAuth.Send, Pass or Fail: lower-case header name characters, '*' any
// run of them, '?' one; or ExtAuthNone.
func ValidHeaderPattern(p string) bool {
	if p == "" || len(p) > maxHeaderPattern {
		return false
	}
	for i := 0; i < len(p); i++ {
		if c := p[i]; c != '?' && !headerName.MatchString(string(c)) {
			return false
		}
	}
	return true
}

// validPatterns reports whether ps are header name patterns, ExtAuthNone
// only alone.
func validPatterns(ps []string) bool {
	for _, p := range ps {
		if !ValidHeaderPattern(p) || (p == ExtAuthNone && len(ps) > 1) {
			return false
		}
	}
	return true
}

// ExtAuthMethods are the methods an ExtAuth may use (those the Lua
// httpclient of HAProxy 2.6 has).
var ExtAuthMethods = []string{"GET", "HEAD", "POST", "PUT", "DELETE"}

// maxExtAuthURL bounds an auth or sign-in URL.
const maxExtAuthURL = 2048

// ExtAuthURLProblem says what keeps u from being an auth or sign-in URL
// ("" when nothing does): http or https, a host (a name or an address)
// and an optional port, path and query, visible ASCII only (no space,
// no map or command separator), no user information or fragment, at
// most 2,048 bytes. It may hold nginx variables (extauthvars.go), each
// checked as a sample value in its place.
func ExtAuthURLProblem(u string) string {
	if u == "" {
		return "empty"
	}
	if len(u) > maxExtAuthURL {
		return "longer than " + strconv.Itoa(maxExtAuthURL) + " bytes"
	}
	if strings.Contains(u, "$") {
		for i := 0; i < len(u); i++ {
			if c := u[i]; c <= ' ' || c >= 0x7f {
				return "holds a character outside visible ASCII or one of \" ' \\ ; # |"
			}
		}
		sampled, bad := withExtAuthVars(u)
		if bad != "" {
			return bad
		}
		u = sampled
	}
	for i := 0; i < len(u); i++ {
		if c := u[i]; c <= ' ' || c >= 0x7f || c == '"' || c == '\'' || c == '\\' || c == ';' || c == '#' || c == '|' {
			return "holds a character outside visible ASCII or one of \" ' \\ ; # |"
		}
	}
	p, err := url.Parse(u)
	if err != nil {
		return "not a URL"
	}
	switch {
	case p.Scheme != "http" && p.Scheme != "https":
		return "scheme " + strconv.Quote(p.Scheme) + ": http or https only"
	case p.Opaque != "" || p.Host == "":
		return "no host"
	case p.User != nil:
		return "user information is not sent"
	}
	host, port := p.Host, ""
	if h, pt, err := net.SplitHostPort(p.Host); err == nil {
		host, port = h, pt
	}
	host = strings.TrimSuffix(strings.TrimPrefix(host, "["), "]")
	if host == "" || (net.ParseIP(host) == nil && !validHostName(host)) {
		return "host " + strconv.Quote(host) + " is not a DNS name or an IP address"
	}
	if port != "" {
		if n, err := strconv.Atoi(port); err != nil || n < 1 || n > 65535 {
			return "port " + strconv.Quote(port) + " is not 1-65535"
		}
	}
	return ""
}

// signInProblem is ExtAuthURLProblem of a sign-in URL, which may also be
// a path on the request's own host (HAProxy Ingress's oauth:
// /oauth2/start?rd=$uri, a Location relative to the request).
func signInProblem(u string) string {
	if strings.HasPrefix(u, "/") && !strings.HasPrefix(u, "//") {
		return ExtAuthURLProblem("http://h" + u)
	}
	return ExtAuthURLProblem(u)
}

// validHostName reports whether h is a DNS name: labels of letters,
// digits and hyphens, not starting or ending with a hyphen.
func validHostName(h string) bool {
	if len(h) > 253 {
		return false
	}
	for _, l := range strings.Split(h, ".") {
		if l == "" || len(l) > 63 || l[0] == '-' || l[len(l)-1] == '-' {
			return false
		}
		for i := 0; i < len(l); i++ {
			c := l[i]
			if !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '-') {
				return false
			}
		}
	}
	return true
}

// ValidExtAuth reports whether a may be written.
func ValidExtAuth(a *ExtAuth) bool {
	if a == nil || (!slices.Contains(ExtAuthMethods, a.Method) && a.Method != ExtAuthSameMethod) || ExtAuthURLProblem(a.URL) != "" {
		return false
	}
	if !validPatterns(a.Send) || !validPatterns(a.Pass) || !validPatterns(a.Fail) || slices.Contains(a.Pass, ExtAuthNone) {
		return false
	}
	if a.SignIn != "" && signInProblem(a.SignIn) != "" {
		return false
	}
	for _, h := range a.Headers {
		if !ValidExtAuthHeader(h) {
			return false
		}
	}
	return a.Backend == "" || ValidBackendName(a.Backend)
}

// ValidExtAuthHeader reports whether h may be an item of ExtAuth.Headers:
// a ValidHeaderName, or two joined by ':' (NAME:SOURCE, SOURCE not NAME).
// Neither holds ',' or ':' (the Lua action's separators).
func ValidExtAuthHeader(h string) bool {
	name, src, renamed := strings.Cut(h, ":")
	return ValidHeaderName(name) && (!renamed || (ValidHeaderName(src) && src != name))
}

// ValidBackendName reports whether n may name a backend: what Name
// writes (lower-case letters, digits, '-' and '_'), at most MaxNameLen.
func ValidBackendName(n string) bool {
	if n == "" || len(n) > MaxNameLen {
		return false
	}
	for i := 0; i < len(n); i++ {
		if c := n[i]; !NameByte(c) && c != '_' {
			return false
		}
	}
	return true
}

// Spec is a's settings as the Lua action reads them (render/extauth.lua):
// five lines, the method, the URL, the headers passed on (comma
// separated, NAME:SOURCE for a rename), the sign-in URL and the backend; then, when any is set,
// four more: the patterns of Send, Pass and Fail (comma separated) and
// "1" for SignInAny. With a Backend the URL is
// written http: the Lua action speaks clear HTTP to the internal
// frontend's unix socket, and the backend of an https URL's Service
// speaks TLS to its servers itself (ingress/extauth.go authService).
func (a *ExtAuth) Spec() string {
	u := a.URL
	if a.Backend != "" && len(u) > len("https://") && strings.EqualFold(u[:len("https://")], "https://") {
		u = "http://" + u[len("https://"):]
	}
	spec := a.Method + "\n" + u + "\n" + strings.Join(a.Headers, ",") + "\n" + a.SignIn + "\n" + a.Backend
	if a.Send == nil && a.Pass == nil && a.Fail == nil && !a.SignInAny {
		return spec
	}
	any := ""
	if a.SignInAny {
		any = "1"
	}
	return spec + "\n" + strings.Join(a.Send, ",") + "\n" + strings.Join(a.Pass, ",") + "\n" + strings.Join(a.Fail, ",") + "\n" + any
}

// extAuthEqual reports whether two settings are the same.
func extAuthEqual(a, b *ExtAuth) bool {
	if a == nil || b == nil {
		return a == b
	}
	return a.Method == b.Method && a.URL == b.URL && slices.Equal(a.Headers, b.Headers) && a.SignIn == b.SignIn && a.Backend == b.Backend &&
		slices.Equal(a.Send, b.Send) && (a.Send == nil) == (b.Send == nil) && slices.Equal(a.Pass, b.Pass) &&
		slices.Equal(a.Fail, b.Fail) && (a.Fail == nil) == (b.Fail == nil) && a.SignInAny == b.SignInAny
}
