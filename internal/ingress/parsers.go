package ingress

import (
	"slices"
	"strconv"
	"strings"

	"github.com/haproxy-k8s-sync/haproxy-k8s-sync/internal/model"
	"github.com/haproxy-k8s-sync/haproxy-k8s-sync/internal/settings"
)

// parsers read the honoured keys into parsed, each the keys of its
// file: done is false for a key not its own, why says what is wrong
// with a malformed value. key is canonical, name the key without its
// prefix. The first parser that takes a key is the only one.
var parsers = []func(s *parsed, key, name, val string) (why string, done bool){
	(*parsed).parseAccess,      // access.go
	(*parsed).parseAuth,        // auth.go
	(*parsed).parsePassthrough, // passthrough.go
	func(s *parsed, key, name, val string) (string, bool) { return s.authTLS.parseAuthTLS(key, name, val) }, // authtls.go
	(*parsed).parseCookie,     // cookie.go
	(*parsed).parseBackendTLS, // backendtls.go
	func(s *parsed, key, name, val string) (string, bool) { // cors.go
		return s.cors.parseCORS(name, val, strings.HasPrefix(key, NginxPrefix))
	},
	func(s *parsed, _, name, val string) (string, bool) { return s.retry.parseRetry(name, val) },   // retry.go
	func(s *parsed, _, name, val string) (string, bool) { return s.canary.parseCanary(name, val) }, // canary.go
	func(s *parsed, key, name, val string) (string, bool) { // balance.go
		lb, why, done := parseBalance(strings.HasPrefix(key, NginxPrefix), name, val)
		if done {
			s.lb = lb
		}
		return why, done
	},
	(*parsed).parseRouting, // routing.go
	(*parsed).parseOther,
}

// parseOther reads the keys no file of their own reads: the redirects'
// switches, upstream keys, request headers and host aliases.
func (s *parsed) parseOther(key, name, val string) (why string, done bool) {
	switch name {
	case "ssl-redirect", "force-ssl-redirect", "from-to-www-redirect", "preserve-trailing-slash":
		b, err := strconv.ParseBool(val)
		if err != nil {
			return settings.ShowValue(val) + " is not true or false", true
		}
		switch name {
		case "preserve-trailing-slash":
			s.keepSlash = b
		case "ssl-redirect":
			s.sslRedirect = &b
			s.haproxySSL = strings.HasPrefix(key, HAProxyPrefix)
		case "force-ssl-redirect":
			s.forceSSL = b
		default:
			s.wwwRedirect = b
		}
	case "service-upstream":
		u, why := parseUpstream(val) // upstream.go
		if why != "" {
			return why, true
		}
		s.upstream = u
	case "upstream-hash-by":
		b, why := parseHashBy(val) // hashby.go
		if why != "" {
			return why, true
		}
		s.balance = b
	case "upstream-vhost":
		h := strings.ToLower(val)
		if !model.ValidSNI(h) || strings.HasPrefix(h, "*") {
			return settings.ShowValue(val) + " is not a host name", true
		}
		s.set = setHeader(s.set, "host", h)
	case "proxy-request-buffering":
		// The HTTP frontends wait for the body (option
		// http-buffer-request, up to one buffer) before they pick a
		// Pod: "on". A body streamed to the Pod as it comes ("off") is
		// a frontend's option, not a request's: a Warning (compile.go).
		switch val {
		case "on", "off":
			s.noBuffering = val == "off"
		default:
			return settings.ShowValue(val) + " is not on or off", true
		}
	case "connection-proxy-header":
		// HAProxy writes the Connection header toward the Pods itself:
		// keep-alive is what it does for HTTP/1.1 unasked, close is sent
		// and the server connection closed after the answer. Other
		// tokens (upgrade) it manages per request.
		switch strings.ToLower(strings.TrimSpace(val)) {
		case "keep-alive":
		case "close":
			s.set = setHeader(s.set, "connection", "close")
		default:
			return settings.ShowValue(val) + " is not keep-alive or close", true
		}
	case "x-forwarded-prefix":
		if !model.ValidHTTPPath(val) {
			return settings.ShowValue(val) + " is not an absolute path of URL characters", true
		}
		s.set = setHeader(s.set, "x-forwarded-prefix", val)
	case "headers":
		for _, line := range strings.Split(val, "\n") {
			line = strings.TrimSpace(line)
			if line == "" {
				continue
			}
			n, hv, ok := strings.Cut(line, ":")
			if !ok {
				n, hv, ok = strings.Cut(line, " ")
			}
			n, hv = strings.ToLower(strings.TrimSpace(n)), strings.TrimSpace(hv)
			if !ok || !model.ValidHeaderName(n) || hv == "" || !model.ValidHeaderSetValue(hv) {
				return "line " + settings.ShowValue(line) + " is not a header name and a value: the value " + badSetValue, true
			}
			s.set = setHeader(s.set, n, hv)
		}
	case "server-alias", "redirect-from":
		list := &s.aliases
		if name == "redirect-from" {
			list = &s.redirectFrom
		}
		for _, h := range strings.FieldsFunc(val, func(r rune) bool { return r == ',' || r == ' ' }) {
			h = strings.ToLower(h)
			if !model.ValidSNI(h) || strings.HasPrefix(h, "*") {
				return settings.ShowValue(h) + " is not a host name", true
			}
			if !slices.Contains(*list, h) {
				*list = append(*list, h)
			}
		}
	default:
		return "", false
	}
	return "", true
}
