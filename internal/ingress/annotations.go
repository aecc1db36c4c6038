package ingress

import (
	"slices"
	"strings"

	"github.com/haproxy-k8s-sync/haproxy-k8s-sync/internal/model"
)

// Annotations of ingress-nginx (nginx.ingress.kubernetes.io/*) and HAProxy
// Ingress (haproxy-ingress.github.io/*): each key is honoured, not
// supported (a Warning Event naming it; the Ingress is served without
// it) or refused (an Event; the Ingress's last good version keeps
// serving). Keys (Verdicts) is the one list; docs/ingress.md's table is
// written from it and TestVerdictsMatchDocs keeps the two equal.

// Verdict is what is done with an annotation key.
type Verdict string

const (
	Honoured    Verdict = "honoured"
	Unsupported Verdict = "unsupported"
	Refused     Verdict = "refused"
)

// The prefixes read.
const (
	NginxPrefix   = "nginx.ingress.kubernetes.io/"
	HAProxyPrefix = "haproxy-ingress.github.io/"
)

// honoured are the keys Compile applies; refused the ones that are never
// rendered (configuration injected as text). Every other key under the
// two prefixes is Unsupported.
var (
	honoured = []string{
		NginxPrefix + "affinity", // cookie.go
		NginxPrefix + "affinity-mode",
		NginxPrefix + "allowlist-source-range", // access.go
		NginxPrefix + "app-root",
		NginxPrefix + "auth-method",           // extauth.go
		NginxPrefix + "auth-realm",            // auth.go
		NginxPrefix + "auth-response-headers", // extauth.go
		NginxPrefix + "auth-secret",
		NginxPrefix + "auth-secret-type",
		NginxPrefix + "auth-signin",                           // extauth.go
		NginxPrefix + "auth-tls-match-cn",                     // authtls.go
		NginxPrefix + "auth-tls-pass-certificate-to-upstream", // authtls.go
		NginxPrefix + "auth-tls-secret",
		NginxPrefix + "auth-tls-verify-client",
		NginxPrefix + "auth-type",
		NginxPrefix + "auth-url",         // extauth.go
		NginxPrefix + "backend-protocol", // HTTP, HTTPS, GRPC, GRPCS, H2C; AUTO_HTTP, FCGI refuse the Ingress
		NginxPrefix + "canary",
		NginxPrefix + "client-body-buffer-size", // access.go: checked; HAProxy streams bodies
		NginxPrefix + "canary-by-cookie",        // canary.go
		NginxPrefix + "canary-by-header",
		NginxPrefix + "canary-by-header-pattern",
		NginxPrefix + "canary-by-header-value",
		NginxPrefix + "canary-weight",
		NginxPrefix + "canary-weight-total",
		NginxPrefix + "cors-allow-credentials", // cors.go
		NginxPrefix + "cors-allow-headers",
		NginxPrefix + "cors-allow-methods",
		NginxPrefix + "cors-allow-origin",
		NginxPrefix + "cors-expose-headers",
		NginxPrefix + "cors-max-age",
		NginxPrefix + "denylist-source-range", // access.go
		NginxPrefix + "enable-cors",
		NginxPrefix + "force-ssl-redirect",
		NginxPrefix + "from-to-www-redirect",
		NginxPrefix + "global-rate-limit", // globallimit.go
		NginxPrefix + "global-rate-limit-ignored-cidrs",
		NginxPrefix + "global-rate-limit-key",
		NginxPrefix + "global-rate-limit-window",
		NginxPrefix + "limit-connections",
		NginxPrefix + "limit-rpm",
		NginxPrefix + "limit-rps",
		NginxPrefix + "limit-whitelist", // access.go
		NginxPrefix + "load-balance",    // balance.go
		NginxPrefix + "permanent-redirect",
		NginxPrefix + "permanent-redirect-code",
		NginxPrefix + "preserve-trailing-slash",
		NginxPrefix + "proxy-body-size",       // access.go
		NginxPrefix + "proxy-connect-timeout", // connect.go
		NginxPrefix + "proxy-cookie-domain",   // proxyrewrite.go
		NginxPrefix + "proxy-cookie-path",
		NginxPrefix + "proxy-next-upstream", // retry.go
		NginxPrefix + "proxy-next-upstream-tries",
		NginxPrefix + "proxy-read-timeout",
		NginxPrefix + "proxy-request-buffering",
		NginxPrefix + "proxy-redirect-from", // proxyrewrite.go
		NginxPrefix + "proxy-redirect-to",
		NginxPrefix + "proxy-ssl-name", // backendtls.go
		NginxPrefix + "proxy-ssl-secret",
		NginxPrefix + "proxy-ssl-server-name",
		NginxPrefix + "proxy-ssl-verify",
		NginxPrefix + "proxy-send-timeout",
		NginxPrefix + "proxy-ssl-ciphers", // tlsopts.go
		NginxPrefix + "proxy-ssl-protocols",
		NginxPrefix + "rewrite-target",
		NginxPrefix + "satisfy", // access.go
		NginxPrefix + "server-alias",
		NginxPrefix + "service-upstream", // upstream.go
		NginxPrefix + "session-cookie-domain",
		NginxPrefix + "session-cookie-expires", // cookie.go
		NginxPrefix + "session-cookie-max-age",
		NginxPrefix + "session-cookie-name",
		NginxPrefix + "session-cookie-path",
		NginxPrefix + "session-cookie-samesite",
		NginxPrefix + "session-cookie-secure",
		NginxPrefix + "ssl-passthrough", // passthrough.go
		NginxPrefix + "ssl-redirect",
		NginxPrefix + "temporal-redirect",
		NginxPrefix + "temporal-redirect-code",
		NginxPrefix + "upstream-hash-by", // hashby.go
		NginxPrefix + "upstream-vhost",
		NginxPrefix + "custom-headers",
		NginxPrefix + "enable-access-log", // access.go
		NginxPrefix + "connection-proxy-header",
		NginxPrefix + "use-regex",
		NginxPrefix + "whitelist-source-range",
		NginxPrefix + "x-forwarded-prefix",
		HAProxyPrefix + "affinity", // cookie.go
		HAProxyPrefix + "allowlist-source-range",
		HAProxyPrefix + "app-root",
		HAProxyPrefix + "auth-headers-fail", // hiextauth.go
		HAProxyPrefix + "auth-headers-request",
		HAProxyPrefix + "auth-headers-succeed",
		HAProxyPrefix + "auth-method",
		HAProxyPrefix + "auth-realm", // auth.go
		HAProxyPrefix + "auth-secret",
		HAProxyPrefix + "auth-signin",          // hiextauth.go
		HAProxyPrefix + "auth-tls-cert-header", // authtls.go
		HAProxyPrefix + "auth-tls-secret",
		HAProxyPrefix + "auth-tls-strict",
		HAProxyPrefix + "auth-tls-verify-client",
		HAProxyPrefix + "auth-url",               // hiextauth.go
		HAProxyPrefix + "backend-protocol",       // h1, h2, h1-ssl, h2-ssl
		HAProxyPrefix + "balance-algorithm",      // balance.go
		HAProxyPrefix + "cors-allow-credentials", // cors.go
		HAProxyPrefix + "cors-allow-headers",
		HAProxyPrefix + "cors-allow-methods",
		HAProxyPrefix + "cors-allow-origin",
		HAProxyPrefix + "cors-enable",
		HAProxyPrefix + "cors-expose-headers",
		HAProxyPrefix + "cors-max-age",
		HAProxyPrefix + "denylist-source-range",
		HAProxyPrefix + "headers",
		HAProxyPrefix + "limit-connections",
		HAProxyPrefix + "limit-rps",
		HAProxyPrefix + "limit-whitelist",
		HAProxyPrefix + "oauth", // oauth.go
		HAProxyPrefix + "oauth-headers",
		HAProxyPrefix + "oauth-uri-prefix",
		HAProxyPrefix + "proxy-body-size",
		HAProxyPrefix + "redirect-from",
		HAProxyPrefix + "redirect-to",
		HAProxyPrefix + "rewrite-target",
		HAProxyPrefix + "secure-backends", // backendtls.go
		HAProxyPrefix + "secure-crt-secret",
		HAProxyPrefix + "secure-sni",
		HAProxyPrefix + "secure-verify-ca-secret",
		HAProxyPrefix + "secure-verify-hostname",
		HAProxyPrefix + "server-alias",
		HAProxyPrefix + "service-upstream",
		HAProxyPrefix + "session-cookie-name", // cookie.go
		HAProxyPrefix + "session-cookie-strategy",
		HAProxyPrefix + "ssl-cipher-suites-backend", // tlsopts.go
		HAProxyPrefix + "ssl-ciphers-backend",
		HAProxyPrefix + "ssl-passthrough", // passthrough.go
		HAProxyPrefix + "ssl-redirect",
		HAProxyPrefix + "timeout-connect", // connect.go
		HAProxyPrefix + "timeout-server",
		HAProxyPrefix + "whitelist-source-range",
	}
	refused = []string{
		NginxPrefix + "auth-snippet",
		NginxPrefix + "configuration-snippet",
		NginxPrefix + "modsecurity-snippet",
		NginxPrefix + "server-snippet",
		NginxPrefix + "stream-snippet",
	}
)

// VerdictOf is the verdict on an annotation key; ok is false for a key of
// neither prefix (not ours to judge).
func VerdictOf(key string) (Verdict, bool) {
	key = canonicalKey(key)
	switch {
	case slices.Contains(honoured, key):
		return Honoured, true
	case slices.Contains(refused, key), slices.Contains(closing, key), strings.HasPrefix(key, HAProxyPrefix+"config-"):
		return Refused, true
	case strings.HasPrefix(key, NginxPrefix), strings.HasPrefix(key, HAProxyPrefix):
		return Unsupported, true
	}
	return "", false
}

// parsed are an Ingress's honoured annotations, checked.
type parsed struct {
	sslRedirect  *bool // nil: the default (true for a host with TLS)
	haproxySSL   bool  // sslRedirect is HAProxy Ingress's: the path kept as it is
	keepSlash    bool  // preserve-trailing-slash: the HTTPS redirect keeps a trailing '/'
	forceSSL     bool
	noBuffering  bool // proxy-request-buffering: off (not honoured, a Warning)
	wwwRedirect  bool
	set          []model.HeaderValue   // request headers replaced
	canary       canaryAnnotations     // canary.go
	retry        retryAnnotations      // retry.go
	balance      string                // upstream-hash-by (hashby.go); "": roundrobin
	lb           string                // load-balance, balance-algorithm (balance.go)
	upstream     bool                  // service-upstream (upstream.go)
	aliases      []string              // more host names served like the Ingress's hosts
	redirectFrom []string              // host names redirected to the Ingress's first host
	routing                            // rewrites, redirects, timeouts, protocol (routing.go)
	access       access                // source ranges (access.go)
	cors         corsAnnotations       // cors.go
	auth         authAnnotations       // auth.go
	btls         backendTLSAnnotations // backendtls.go
	cookie       cookieAnnotations     // cookie.go
	authTLS      authTLSAnnotations    // authtls.go
	passthrough  bool                  // ssl-passthrough (passthrough.go)
}

// notHonoured is an annotation key not applied and its verdict.
type notHonoured struct {
	key     string
	verdict Verdict
}

// parseAnnotations reads an Ingress's annotations: the honoured ones
// checked into parsed, the others listed; refused is why the Ingress
// is refused ("" when it is not): a refused key, or a malformed value.
func parseAnnotations(a map[string]string) (s parsed, other []notHonoured, refused string) {
	s.canary.weight, s.canary.total = -1, 100
	keys := make([]string, 0, len(a))
	for k := range a {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	bad := func(k, why string) {
		if refused == "" {
			refused = "annotation " + k + ": " + why
		}
	}
	for _, k := range keys {
		v, ok := VerdictOf(k)
		if !ok {
			continue
		}
		if v != Honoured {
			other = append(other, notHonoured{k, v})
			switch {
			case v == Refused && slices.Contains(closing, canonicalKey(k)):
				bad(k, "refused: access control is not served yet, and serving the Ingress without it would open what it closes")
			case v == Refused:
				bad(k, "refused: configuration text is never rendered")
			}
			continue
		}
		val := strings.TrimSpace(a[k])
		ck := canonicalKey(k)
		name := strings.TrimPrefix(strings.TrimPrefix(ck, NginxPrefix), HAProxyPrefix)
		for _, parse := range parsers {
			if why, done := parse(&s, ck, name, val); done {
				if why != "" {
					bad(k, why)
				}
				break
			}
		}
	}
	if s.balance == "" {
		s.balance = s.lb // upstream-hash-by wins (balance.go)
	}
	if why := s.canary.finish(); why != "" {
		bad(NginxPrefix+"canary-weight", why)
	}
	if why := s.finishRouting(); why != "" && refused == "" {
		refused = why
	}
	if why := s.btls.finish(); why != "" && refused == "" {
		refused = why
	}
	if why := s.auth.finish(); why != "" && refused == "" {
		refused = why
	}
	if why := s.access.global.finish(); why != "" && refused == "" { // globallimit.go
		refused = why
	}
	if _, why := s.cors.policy(); why != "" && refused == "" {
		refused = why
	}
	return s, other, refused
}

// setHeader sets header n to v in hs (the last value of a name wins).
func setHeader(hs []model.HeaderValue, n, v string) []model.HeaderValue {
	hs = slices.DeleteFunc(hs, func(h model.HeaderValue) bool { return h.Name == n })
	hs = append(hs, model.HeaderValue{Name: n, Value: v})
	slices.SortFunc(hs, func(a, b model.HeaderValue) int { return strings.Compare(a.Name, b.Name) })
	return hs
}
