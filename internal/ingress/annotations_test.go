package ingress

import (
	"os"
	"regexp"
	"slices"
	"testing"
)

// TestAnnotationTableMatchesCode: docs/ingress.md's table gives every key
// the verdict the code gives it, and lists every key honoured or refused.
func TestAnnotationTableMatchesCode(t *testing.T) {
	doc, err := os.ReadFile("../../docs/ingress.md")
	if err != nil {
		t.Fatal(err)
	}
	rows := regexp.MustCompile("(?m)^\\| `([^`]+)` \\| (honoured|unsupported|refused) \\|").FindAllStringSubmatch(string(doc), -1)
	if len(rows) < 200 {
		t.Fatalf("%d rows in the table, want every key of both projects", len(rows))
	}
	var keys []string
	for _, r := range rows {
		keys = append(keys, r[1])
		if v, ok := VerdictOf(r[1]); !ok || string(v) != r[2] {
			t.Errorf("%s: the table says %s, the code %q", r[1], r[2], v)
		}
	}
	for _, k := range slices.Concat(honoured, refused) {
		if !slices.Contains(keys, k) {
			t.Errorf("%s is not in the table", k)
		}
	}
}

// TestParseAnnotations: each honoured key's malformed value refuses the
// Ingress; nothing a value says reaches the model unchecked.
func TestParseAnnotations(t *testing.T) {
	for _, tc := range []struct {
		key, value string
		refused    bool
	}{
		{NginxPrefix + "ssl-redirect", "false", false},
		{NginxPrefix + "ssl-redirect", "no way", true},
		{NginxPrefix + "satisfy", "any", false}, // access.go
		{NginxPrefix + "satisfy", "all", false},
		{NginxPrefix + "satisfy", "Any", true},
		{NginxPrefix + "canary-weight", "101", true}, // over the default total
		{NginxPrefix + "canary-weight", "-1", true},
		{NginxPrefix + "canary-weight", "50", false},
		{NginxPrefix + "canary-by-header", "X Bad", true},
		{NginxPrefix + "canary-by-header-value", "a|b", true},
		{NginxPrefix + "canary-by-header-pattern", "^(eu|us)$", false}, // canary.go
		{NginxPrefix + "canary-by-header-pattern", "^v2$", false},
		{NginxPrefix + "canary-by-header-pattern", "^(?:a\\.b|c)$", false},
		{NginxPrefix + "canary-by-header-pattern", "eu", true}, // unanchored: a regex match
		{NginxPrefix + "canary-by-header-pattern", "^(a+)+$", true},
		{NginxPrefix + "canary-by-header-pattern", "^(a|b$", true},
		{NginxPrefix + "canary-by-header-pattern", "^(a b)$", true},
		{NginxPrefix + "canary-by-cookie", "beta_user", false},
		{NginxPrefix + "canary-by-cookie", "a;b", true},
		{NginxPrefix + "canary-by-cookie", "a)b", true},
		{NginxPrefix + "proxy-next-upstream", "error timeout http_502", false}, // retry.go
		{NginxPrefix + "proxy-next-upstream", "off", false},
		{NginxPrefix + "proxy-next-upstream", "off error", true},
		{NginxPrefix + "proxy-next-upstream", "http_429", true},
		{NginxPrefix + "proxy-next-upstream", "error\n\tretries 99", true},
		{NginxPrefix + "proxy-next-upstream", "", true},
		{NginxPrefix + "proxy-next-upstream-tries", "0", false},
		{NginxPrefix + "proxy-next-upstream-tries", "11", false},
		{NginxPrefix + "proxy-next-upstream-tries", "12", true},
		{NginxPrefix + "proxy-next-upstream-tries", "-1", true},
		{NginxPrefix + "session-cookie-path", "/app", false}, // cookie.go
		{NginxPrefix + "session-cookie-path", "/a; Domain=evil", true},
		{NginxPrefix + "session-cookie-domain", ".example.com", false},
		{NginxPrefix + "session-cookie-domain", "*.example.com", true},
		{NginxPrefix + "session-cookie-domain", "example.com attr x", true},
		{NginxPrefix + "upstream-vhost", "*.example.com", true},
		{NginxPrefix + "upstream-vhost", "a.example.com\nhttp-request deny", true},
		{NginxPrefix + "x-forwarded-prefix", "/a b", true},
		{NginxPrefix + "enable-access-log", "false", false},
		{NginxPrefix + "enable-access-log", "off", true},
		{NginxPrefix + "connection-proxy-header", "close", false},
		{NginxPrefix + "connection-proxy-header", "Keep-Alive", false},
		{NginxPrefix + "connection-proxy-header", "upgrade", true},
		{NginxPrefix + "connection-proxy-header", "close\nhttp-request deny", true},
		{NginxPrefix + "backend-protocol", "GRPC", false},
		{NginxPrefix + "backend-protocol", "h2c", false},
		{NginxPrefix + "backend-protocol", "HTTPS", false}, // backendtls.go
		{NginxPrefix + "backend-protocol", "GRPCS", false},
		{NginxPrefix + "backend-protocol", "AUTO_HTTP", true},
		{NginxPrefix + "backend-protocol", "FCGI", true},
		{NginxPrefix + "backend-protocol", "http", false},
		{HAProxyPrefix + "backend-protocol", "h2", false},
		{HAProxyPrefix + "backend-protocol", "h2-ssl", false},
		{HAProxyOldPrefix + "backend-protocol", "h1-ssl", false}, // HAProxy Ingress's older prefix
		{HAProxyOldPrefix + "backend-protocol", "h3", true},
		// Cookie affinity (cookie.go): a name and attributes checked.
		{NginxPrefix + "affinity", "cookie", false},
		{NginxPrefix + "affinity", "ip", true},
		{NginxPrefix + "affinity-mode", "balanced", false},
		{NginxPrefix + "session-cookie-name", "SRV; Path=/", true},
		{NginxPrefix + "session-cookie-max-age", "3600", false},
		{NginxPrefix + "session-cookie-max-age", "1h", true},
		{NginxPrefix + "session-cookie-samesite", "Lax", false},
		{NginxPrefix + "session-cookie-samesite", "Lax; Domain=x", true},
		{HAProxyPrefix + "session-cookie-strategy", "prefix", true},
		// Backend TLS (backendtls.go): names and switches checked.
		{NginxPrefix + "proxy-ssl-verify", "on", false},
		{NginxPrefix + "proxy-ssl-verify", "yes", true},
		{NginxPrefix + "proxy-ssl-name", "api.internal", false},
		{NginxPrefix + "proxy-ssl-name", "api.internal verify none", true},
		{NginxPrefix + "proxy-ssl-server-name", "on", true}, // needs proxy-ssl-name
		{NginxPrefix + "proxy-ssl-secret", "apps/ca", false},
		{NginxPrefix + "proxy-ssl-secret", "a/b/c", true},
		{HAProxyPrefix + "secure-backends", "true", false},
		{HAProxyPrefix + "secure-backends", "on", true},
		{HAProxyPrefix + "secure-sni", "api.internal", false},
		{HAProxyPrefix + "secure-sni", "host", true}, // the request's name: not served yet
		{HAProxyPrefix + "secure-verify-hostname", "*.internal", true},
		{HAProxyOldPrefix + "config-backend", "x", true},
		// Versions and ciphers (tlsopts.go): known names only, never an
		// empty list, never a second word.
		{NginxPrefix + "proxy-ssl-protocols", "TLSv1.2 TLSv1.3", false},
		{NginxPrefix + "proxy-ssl-protocols", "TLSv1.3", false},
		{NginxPrefix + "proxy-ssl-protocols", "TLSv1 TLSv1.2", true}, // a gap
		{NginxPrefix + "proxy-ssl-protocols", "SSLv3 TLSv1", true},
		{NginxPrefix + "proxy-ssl-protocols", "", true},
		{NginxPrefix + "proxy-ssl-ciphers", "HIGH:!aNULL:!MD5", false},
		{NginxPrefix + "proxy-ssl-ciphers", "ECDHE-RSA-AES128-GCM-SHA256:ECDHE-ECDSA-AES128-GCM-SHA256", false},
		{NginxPrefix + "proxy-ssl-ciphers", "HIGH verify none", true},
		{NginxPrefix + "proxy-ssl-ciphers", "FOO-BAR", true},    // OpenSSL would refuse the list
		{NginxPrefix + "proxy-ssl-ciphers", "HIGH:!HIGH", true}, // empty
		{NginxPrefix + "proxy-ssl-ciphers", "AES128-SHA:!AES128-SHA", true},
		{NginxPrefix + "proxy-ssl-ciphers", "!aNULL", true},
		{NginxPrefix + "proxy-ssl-ciphers", "HIGH\nhttp-request deny", true},
		{HAProxyPrefix + "ssl-ciphers-backend", "ECDHE-ECDSA-AES256-GCM-SHA384", false},
		{HAProxyPrefix + "ssl-cipher-suites-backend", "TLS_AES_128_GCM_SHA256:TLS_CHACHA20_POLY1305_SHA256", false},
		{HAProxyPrefix + "ssl-cipher-suites-backend", "TLS_AES_128_GCM_SHA256:HIGH", true},
		{NginxPrefix + "ssl-cipher-suites-backend", "TLS_AES_128_GCM_SHA256", false}, // not nginx's: unsupported
		{NginxPrefix + "service-upstream", "true", false},                            // upstream.go
		{HAProxyPrefix + "service-upstream", "yes", true},
		// Balance (balance.go).
		{NginxPrefix + "load-balance", "ewma", false},
		{NginxPrefix + "load-balance", "round_robin", false},
		{NginxPrefix + "load-balance", "least_conn", true},
		{HAProxyPrefix + "balance-algorithm", "leastconn", false},
		{HAProxyPrefix + "balance-algorithm", "uri", true},
		{HAProxyPrefix + "balance-algorithm", "leastconn\n\tretries 9", true},
		{NginxPrefix + "rewrite-target", "/$1", false}, // checked against each path (TestCompile/routing)
		{NginxPrefix + "rewrite-target", "", true},
		{HAProxyPrefix + "rewrite-target", "/a b", true},
		{NginxPrefix + "use-regex", "yes please", true},
		{NginxPrefix + "preserve-trailing-slash", "true", false},
		{NginxPrefix + "preserve-trailing-slash", "keep", true},
		{NginxPrefix + "proxy-request-buffering", "on", false},
		{NginxPrefix + "proxy-request-buffering", "off", false}, // a Warning (TestCompile/annotations)
		{NginxPrefix + "proxy-request-buffering", "true", true},
		{NginxPrefix + "app-root", "/", true},
		{NginxPrefix + "app-root", "/app\nhttp-request deny", true},
		{NginxPrefix + "app-root", "/app", false},
		{NginxPrefix + "permanent-redirect", "https://a.example.com/x", false},
		{NginxPrefix + "permanent-redirect", "https://a.example.com/x?q=1", true},
		{NginxPrefix + "permanent-redirect", "ftp://a.example.com/", true},
		{NginxPrefix + "permanent-redirect", "https://a.example.com/a b", true},
		{NginxPrefix + "permanent-redirect", "https://user@a.example.com/", true},
		{NginxPrefix + "permanent-redirect", "/relative", true},
		{NginxPrefix + "permanent-redirect-code", "308", false},
		{NginxPrefix + "permanent-redirect-code", "304", true},
		{NginxPrefix + "temporal-redirect-code", "200", true},
		{HAProxyPrefix + "redirect-to", "http://b.example.com:8080", false},
		{HAProxyPrefix + "redirect-to", "http://b.example.com:99999", true},
		{NginxPrefix + "proxy-read-timeout", "120", false},
		{NginxPrefix + "proxy-read-timeout", "120s", true}, // ingress-nginx reads seconds as a number
		{NginxPrefix + "proxy-send-timeout", "0", true},
		{HAProxyPrefix + "timeout-server", "90s", false},
		{HAProxyPrefix + "timeout-server", "1500", false}, // ms
		{HAProxyPrefix + "timeout-server", "2d", true},
		{HAProxyPrefix + "timeout-server", "5 s", true},
		{NginxPrefix + "proxy-connect-timeout", "10", false}, // connect.go
		{NginxPrefix + "proxy-connect-timeout", "10s", true}, // seconds as a number, as proxy-read-timeout
		{NginxPrefix + "proxy-connect-timeout", "0", true},
		{NginxPrefix + "proxy-connect-timeout", "86401", true},
		{HAProxyPrefix + "timeout-connect", "1500", false}, // ms
		{HAProxyPrefix + "timeout-connect", "5s\n\ttimeout server 1s", true},
		{HAProxyPrefix + "timeout-connect", "0", true},
		{HAProxyPrefix + "headers", "X-A: 1\nX-B: has space; and 'quotes'", false},
		{HAProxyPrefix + "headers", "X-A: 1\nX-B: 100%", true},
		{HAProxyPrefix + "headers", "X-A: 1\nX-B: a|b", true},
		{HAProxyPrefix + "headers", "X-A: caf\u00e9", true},
		{HAProxyPrefix + "headers", "X-A: 1\nx-b 2", false},
		{HAProxyPrefix + "config-defaults", "anything", true},
		{NginxPrefix + "stream-snippet", "", true},
		{NginxPrefix + "server-alias", "a.example.com, b.example.com", false},
		{NginxPrefix + "server-alias", "a.example.com,b example.com;x", true},
		{HAProxyPrefix + "redirect-from", "old.example.com", false},
		{HAProxyPrefix + "redirect-from", "*.example.com", true},
		{"example.com/other", "x", false},
		// Source ranges (access.go): served; a value that does not parse
		// refuses the Ingress, never serves it open.
		{NginxPrefix + "whitelist-source-range", "10.0.0.0/8", false},
		{NginxPrefix + "allowlist-source-range", "10.0.0.0/8, 2001:db8::/32,192.0.2.7", false},
		{NginxPrefix + "denylist-source-range", "2001:db8::1", false},
		{NginxPrefix + "allowlist-source-range", "10.0.0.0/33", true},
		{NginxPrefix + "allowlist-source-range", "10.0.0.0/8\nhttp-request allow", true},
		{NginxPrefix + "allowlist-source-range", "fe80::1%eth0", true},
		{NginxPrefix + "allowlist-source-range", " , ", true},
		{NginxPrefix + "denylist-source-range", "!10.0.0.0/8", true},
		{HAProxyPrefix + "denylist-source-range", "example.com", true},
		{HAProxyOldPrefix + "allowlist-source-range", "10.0.0.0/8", false},
		{NginxPrefix + "proxy-body-size", "8m", false},
		{NginxPrefix + "proxy-body-size", "0", false},
		{HAProxyPrefix + "proxy-body-size", "unlimited", false},
		{NginxPrefix + "proxy-body-size", "8 m", true},
		{NginxPrefix + "proxy-body-size", "8mb", true},
		{NginxPrefix + "proxy-body-size", "2048g", true},
		{NginxPrefix + "client-body-buffer-size", "16k", false}, // checked, nothing rendered
		{NginxPrefix + "client-body-buffer-size", "1M", false},
		{NginxPrefix + "client-body-buffer-size", "16kb", true},
		{NginxPrefix + "client-body-buffer-size", "unlimited", true},
		{NginxPrefix + "client-body-buffer-size", "2048g", true},
		{NginxPrefix + "limit-rps", "20", false},
		{HAProxyPrefix + "limit-connections", "0", false},
		{NginxPrefix + "limit-rps", "-1", true},
		{NginxPrefix + "limit-connections", "5r/s", true},
		// Authentication not served: refused, never served open.
		{NginxPrefix + "auth-type", "basic", true},
		{HAProxyPrefix + "oauth", "oauth2", true},              // oauth2_proxy only (oauth.go)
		{NginxPrefix + "auth-tls-verify-client", "off", false}, // unsupported: auth-tls-secret is what closes
	} {
		_, _, refused := parseAnnotations(map[string]string{tc.key: tc.value})
		if (refused != "") != tc.refused {
			t.Errorf("%s=%q: refused %q, want refused %v", tc.key, tc.value, refused, tc.refused)
		}
	}
}
