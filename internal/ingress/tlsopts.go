package ingress

import (
	"slices"
	"strings"

	"github.com/haproxy-k8s-sync/haproxy-k8s-sync/internal/settings"
)

// The TLS versions and ciphers an Ingress's backend TLS offers its Pods:
// ingress-nginx's proxy-ssl-protocols and proxy-ssl-ciphers, HAProxy
// Ingress's ssl-ciphers-backend and ssl-cipher-suites-backend, onto the
// servers' ssl-min-ver, ssl-max-ver, ciphers and ciphersuites
// (model.BackendTLS). They are settings of the backend TLS (tlsTag): a
// backend of its own. Without TLS to the Pods they do nothing, as in
// ingress-nginx.
//
// Only names OpenSSL knows are taken, and only lists that keep at least
// one cipher: a list OpenSSL refuses as a whole would fail HAProxy's
// configuration check, and with it every other change.

// tlsVersions are nginx's protocol names in order, and HAProxy's.
var tlsVersions = []struct{ nginx, haproxy string }{
	{"TLSv1", "TLSv1.0"}, {"TLSv1.1", "TLSv1.1"}, {"TLSv1.2", "TLSv1.2"}, {"TLSv1.3", "TLSv1.3"},
}

// parseProtocols reads proxy-ssl-protocols (nginx's names, spaces
// between) into the lowest and highest version: HAProxy offers a range,
// so a gap refuses the Ingress, and so do SSLv2 and SSLv3.
func parseProtocols(val string) (minVer, maxVer, why string) {
	lo, hi, seen := -1, -1, 0
	for _, p := range strings.Fields(val) {
		i := slices.IndexFunc(tlsVersions, func(v struct{ nginx, haproxy string }) bool { return v.nginx == p })
		if i < 0 {
			return "", "", settings.ShowValue(p) + " is not served: only TLSv1, TLSv1.1, TLSv1.2 and TLSv1.3"
		}
		if lo < 0 || i < lo {
			lo = i
		}
		hi = max(hi, i)
		seen |= 1 << i
	}
	if lo < 0 {
		return "", "", "no protocol given"
	}
	if want := (1<<(hi+1) - 1) &^ (1<<lo - 1); seen != want {
		return "", "", settings.ShowValue(val) + " is not served: HAProxy offers a range of versions, without a gap"
	}
	return tlsVersions[lo].haproxy, tlsVersions[hi].haproxy, ""
}

// tls12Ciphers are the OpenSSL names of the TLS 1.2 ciphers a list may
// name; none is dropped by the exclusions below, so a list naming one
// never comes out empty.
var tls12Ciphers = []string{
	"ECDHE-ECDSA-AES128-GCM-SHA256", "ECDHE-RSA-AES128-GCM-SHA256", "ECDHE-ECDSA-AES256-GCM-SHA384",
	"ECDHE-RSA-AES256-GCM-SHA384", "ECDHE-ECDSA-CHACHA20-POLY1305", "ECDHE-RSA-CHACHA20-POLY1305",
	"DHE-RSA-AES128-GCM-SHA256", "DHE-RSA-AES256-GCM-SHA384", "DHE-RSA-CHACHA20-POLY1305",
	"ECDHE-ECDSA-AES128-SHA256", "ECDHE-RSA-AES128-SHA256", "ECDHE-ECDSA-AES256-SHA384", "ECDHE-RSA-AES256-SHA384",
	"ECDHE-ECDSA-AES128-SHA", "ECDHE-RSA-AES128-SHA", "ECDHE-ECDSA-AES256-SHA", "ECDHE-RSA-AES256-SHA",
	"AES128-GCM-SHA256", "AES256-GCM-SHA384", "AES128-SHA256", "AES256-SHA256", "AES128-SHA", "AES256-SHA",
}

// cipherAliases may stand alone (each holds ciphers of the list above);
// cipherExclusions may only follow ! or - (none holds a cipher of the
// list above).
var (
	cipherAliases    = []string{"DEFAULT", "HIGH"}
	cipherExclusions = []string{"aNULL", "eNULL", "NULL", "MD5", "RC4", "DES", "3DES", "EXPORT", "EXP", "LOW",
		"PSK", "SRP", "DSS", "aDSS", "CAMELLIA", "SEED", "IDEA", "ARIA"}
)

// parseCiphers reads an OpenSSL cipher list for TLS 1.2 and older
// (colons or spaces between, as nginx and HAProxy Ingress take it) into
// HAProxy's one word.
func parseCiphers(val string) (string, string) {
	var out []string
	positive := false
	for _, c := range strings.FieldsFunc(val, func(r rune) bool { return r == ':' || r == ' ' || r == ',' }) {
		switch {
		case c == "@STRENGTH":
		case (c[0] == '!' || c[0] == '-') && (slices.Contains(cipherExclusions, c[1:]) || slices.Contains(tls12Ciphers, c[1:])):
		case slices.Contains(tls12Ciphers, c) || slices.Contains(cipherAliases, c):
			positive = true
		default:
			return "", settings.ShowValue(c) + " is not served: only OpenSSL's names of ECDHE, DHE and RSA AES-GCM, CHACHA20 and AES-SHA ciphers, DEFAULT and HIGH, and the exclusions !aNULL, !MD5, !RC4 and the like"
		}
		out = append(out, c)
	}
	for _, c := range out {
		if c[0] == '!' || c[0] == '-' {
			if slices.Contains(out, c[1:]) {
				return "", settings.ShowValue(c) + " excludes a cipher the list names"
			}
		}
	}
	if !positive || len(out) > 64 {
		return "", settings.ShowValue(val) + " names no cipher (or more than 64 elements)"
	}
	return strings.Join(out, ":"), ""
}

// tls13Suites are OpenSSL's TLS 1.3 suites.
var tls13Suites = []string{"TLS_AES_128_GCM_SHA256", "TLS_AES_256_GCM_SHA384", "TLS_CHACHA20_POLY1305_SHA256",
	"TLS_AES_128_CCM_SHA256", "TLS_AES_128_CCM_8_SHA256"}

// parseSuites reads a TLS 1.3 suite list (colons between).
func parseSuites(val string) (string, string) {
	var out []string
	for _, s := range strings.FieldsFunc(val, func(r rune) bool { return r == ':' || r == ' ' || r == ',' }) {
		if !slices.Contains(tls13Suites, s) {
			return "", settings.ShowValue(s) + " is not a TLS 1.3 suite: " + strings.Join(tls13Suites, ", ")
		}
		out = append(out, s)
	}
	if len(out) == 0 {
		return "", "no suite given"
	}
	return strings.Join(out, ":"), ""
}

// parseTLSOptions reads key (canonical; name without its prefix) into b
// when it is one of these keys: done is false for the others.
func (b *backendTLSAnnotations) parseTLSOptions(key, name, val string) (why string, done bool) {
	nginx := strings.HasPrefix(key, NginxPrefix)
	switch {
	case nginx && name == "proxy-ssl-protocols":
		b.minVer, b.maxVer, why = parseProtocols(val)
	case nginx && name == "proxy-ssl-ciphers", !nginx && name == "ssl-ciphers-backend":
		b.ciphers, why = parseCiphers(val)
	case !nginx && name == "ssl-cipher-suites-backend":
		b.suites, why = parseSuites(val)
	default:
		return "", false
	}
	return why, true
}
