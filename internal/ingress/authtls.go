package ingress

import (
	"slices"
	"strconv"
	"strings"

	"github.com/haproxy-k8s-sync/haproxy-k8s-sync/internal/model"
	"github.com/haproxy-k8s-sync/haproxy-k8s-sync/internal/settings"
)

// Client certificate authentication of an Ingress's hosts
// (ingress-nginx's auth-tls-secret and auth-tls-verify-client): the CA
// bundle of the Secret's ca.crt verifies the clients of every host of
// the Ingress, on that host's crt-list line, as model.Certificate.Client
// (render/hostauth.go): "on" (the default) refuses a client without a
// valid certificate in the handshake, "optional" lets one without a
// certificate through and refuses one whose certificate does not verify,
// "off" asks nothing. A request for such a host on a connection that
// named another server (or none) is answered 421, so no client reaches
// the host without its handshake. Map data and crt-list lines: turning
// it on, off or to another CA reloads nothing.
//
// Refused (an Event, the last good version kept): optional_no_ca (a
// certificate asked for and not verified needs the bind's ignore lists,
// which would let unverified certificates through every host's
// `verify required` too), a host of the rules without a spec.tls entry
// of the Ingress naming it, a wildcard host (the per-host rules look up
// exact names), and a malformed value. A CA Secret missing or without a
// valid ca.crt: an Event, and the hosts answer 403 until it has one,
// never served unverified.

// unsupportedWhy is why a key is not honoured, said in its
// UnsupportedAnnotation Event, for the keys whose reason a user would not
// guess (canonical keys).
var unsupportedWhy = map[string]string{
	NginxPrefix + "auth-tls-error-page":   errorPageWhy,
	HAProxyPrefix + "auth-tls-error-page": errorPageWhy,
}

// errorPageWhy: ingress-nginx redirects a client whose certificate does
// not verify to the page; here that client's handshake is refused, and
// serving it would take ignoring verification errors on the bind, for
// every host of the frontend.
const errorPageWhy = "a client without a valid certificate is refused in the TLS handshake, so there is no HTTP answer to redirect to the page"

// authTLSAnnotations are an Ingress's auth-tls-* keys, checked.
type authTLSAnnotations struct {
	secret string // "name" or "namespace/name"; "": none
	mode   string // "on", "optional", "off"; "": on
	pass   bool   // auth-tls-pass-certificate-to-upstream
	ha     bool   // the Secret named by HAProxy Ingress's key: its X-SSL-Client-* headers
	haCert bool   // HAProxy Ingress's auth-tls-cert-header
	lax    bool   // HAProxy Ingress's auth-tls-strict: false written (not given: a Warning)
	// auth-tls-match-cn (ingress-nginx's): searched for in the verified
	// client certificate's subject (model.HTTPAccess.MatchCN)
	matchCN string
}

// clientCert is what the backend is told of the client's certificate
// (model.HTTPAccess.ClientCert) when the Ingress verifies its clients
// (c not nil): ingress-nginx's ssl-client-verify, -subject-dn and
// -issuer-dn headers always, ssl-client-cert with
// auth-tls-pass-certificate-to-upstream.
func (a authTLSAnnotations) clientCert(c *model.ClientAuth) uint8 {
	switch {
	case c == nil:
		return 0
	case a.haCert:
		return model.ClientCertHAPass
	case a.ha:
		return model.ClientCertHAInfo
	case a.pass:
		return model.ClientCertPass
	}
	return model.ClientCertInfo
}

// parseAuthTLS reads key (canonical; name without its prefix) into a
// when it is one of its keys (done). Both prefixes' auth-tls-secret and
// auth-tls-verify-client mean the same; HAProxy Ingress's secret passes
// its X-SSL-Client-* headers instead of ingress-nginx's ssl-client-*.
func (a *authTLSAnnotations) parseAuthTLS(key, name, val string) (why string, done bool) {
	ha := strings.HasPrefix(key, HAProxyPrefix)
	if !ha && !strings.HasPrefix(key, NginxPrefix) {
		return "", false
	}
	switch name {
	case "auth-tls-secret":
		ns, n, ok := strings.Cut(val, "/")
		if !ok {
			ns, n = "", val
		}
		if (ok && !validObjectName(ns)) || !validObjectName(n) {
			return settings.ShowValue(val) + " is not a Secret name or namespace/name", true
		}
		if a.secret != "" && a.secret != val {
			return "names " + settings.ShowValue(val) + " where the other prefix's auth-tls-secret names " + settings.ShowValue(a.secret), true
		}
		a.secret, a.ha = val, a.ha || ha
		return "", true
	case "auth-tls-strict", "auth-tls-cert-header":
		b, err := strconv.ParseBool(val)
		if err != nil {
			return settings.ShowValue(val) + " is not true or false", true
		}
		if name == "auth-tls-strict" {
			a.lax = !b
		} else {
			a.haCert = b
		}
		return "", true
	case "auth-tls-verify-client":
		switch val {
		case "on", "optional", "off":
			a.mode = val
			return "", true
		case "optional_no_ca":
			return "optional_no_ca is refused: a certificate asked for but not verified would need HAProxy's ignore lists on the bind, which would let unverified certificates through every host's verification", true
		}
		return settings.ShowValue(val) + " is not on, off, optional or optional_no_ca", true
	case "auth-tls-match-cn":
		if why := model.MatchCNProblem(val); why != "" {
			return settings.ShowValue(val) + ": " + why, true
		}
		a.matchCN = val
		return "", true
	case "auth-tls-pass-certificate-to-upstream":
		b, err := strconv.ParseBool(val)
		if err != nil {
			return settings.ShowValue(val) + " is not true or false", true
		}
		a.pass = b
		return "", true
	}
	return "", false
}

// matchCNProblem says why auth-tls-match-cn cannot be honoured ("" when
// it can): without auth-tls-secret no certificate is verified, and
// served without it the Ingress would admit whom it shuts out.
func (a authTLSAnnotations) matchCNProblem() string {
	if a.matchCN != "" && a.secret == "" {
		return "annotation " + NginxPrefix + "auth-tls-match-cn: without auth-tls-secret no client certificate is verified, so no subject can be matched"
	}
	return ""
}

// validObjectName reports whether n may name a Secret or a namespace
// (a DNS subdomain, as the API requires).
func validObjectName(n string) bool {
	if n == "" || len(n) > 253 {
		return false
	}
	for i := 0; i < len(n); i++ {
		c := n[i]
		if !(c >= 'a' && c <= 'z' || c >= '0' && c <= '9' || c == '-' || c == '.') {
			return false
		}
	}
	return true
}

// resolve is the verification of the Ingress's hosts (nil: none): the
// CA bundle of the Secret named, in namespace ns unless it names one.
// A CA that does not resolve is an Event and a verification without a
// bundle, which render closes (403).
func (a authTLSAnnotations) resolve(ns string, in Input, event func(reason, msg string)) *model.ClientAuth {
	if a.secret == "" || a.mode == "off" {
		return nil
	}
	k := Key{ns, a.secret}
	if sns, n, ok := strings.Cut(a.secret, "/"); ok {
		k = Key{sns, n}
	}
	c := &model.ClientAuth{CA: model.Name("cca", k.Namespace, k.Name), Optional: a.mode == "optional"}
	if ca := in.CAs[k]; ca != nil {
		c.CAPEM = ca
	} else {
		p := in.CAProblems[k]
		if p == "" {
			p = "not found, or no key " + CAKey
		}
		event("InvalidClientCA", "Secret "+k.String()+": "+p+"; the Ingress's hosts answer 403 until it holds a CA bundle")
	}
	return c
}

// authTLSHosts is why u cannot verify its hosts' clients ("" when it
// can, or verifies none): every host of its rules must be an exact name
// its spec.tls lists.
func authTLSHosts(u *unit) string {
	if u.client == nil {
		return ""
	}
	var tls []string
	for _, t := range u.tls {
		for _, h := range t.Hosts {
			tls = append(tls, strings.ToLower(h))
		}
	}
	for _, p := range u.paths {
		switch {
		case p.host == model.AnyHost:
			return "auth-tls-secret: a rule without a host cannot verify its clients by host; name the host"
		case strings.HasPrefix(p.host, "*"):
			return "auth-tls-secret: the wildcard host " + p.host + " is refused: clients are verified per exact host name"
		case !slices.Contains(tls, p.host):
			return "auth-tls-secret: host " + p.host + " has no spec.tls entry of this Ingress, so no certificate line of its own to verify its clients on"
		}
	}
	if u.set.sslRedirect != nil && !*u.set.sslRedirect {
		return "auth-tls-secret with ssl-redirect false would serve the hosts over plain HTTP, unverified"
	}
	if u.fallback != "" {
		return "auth-tls-secret: spec.defaultBackend serves every host, which cannot verify its clients by host"
	}
	return ""
}

// authCertName names the certificate of Secret k served with client
// verification c: a line of its own, apart from the Secret's plain one.
func authCertName(k Key, c *model.ClientAuth) string {
	mode := "on"
	if c.Optional {
		mode = "opt"
	}
	return model.Name("cert", k.Namespace, k.Name, c.CA, mode)
}

// verifiedHosts are the names whose clients some line verifies, or that
// are closed: the Secrets' plain lines leave them out, so a client
// naming one always meets its verification.
func verifiedHosts(sni map[string][]string, client map[string]*model.ClientAuth, closed []string) map[string]bool {
	out := map[string]bool{}
	for n, c := range client {
		if c != nil {
			for _, h := range sni[n] {
				out[h] = true
			}
		}
	}
	for _, h := range closed {
		out[h] = true
	}
	return out
}

// lowered are hosts in lower case.
func lowered(hosts []string) []string {
	out := make([]string, len(hosts))
	for i, h := range hosts {
		out[i] = strings.ToLower(h)
	}
	return out
}
