package ingress

import (
	"slices"
	"strconv"
	"strings"

	netv1 "k8s.io/api/networking/v1"

	"github.com/haproxy-k8s-sync/haproxy-k8s-sync/internal/model"
	"github.com/haproxy-k8s-sync/haproxy-k8s-sync/internal/settings"
)

// SSL passthrough (ingress-nginx's and HAProxy Ingress's ssl-passthrough:
// "true"): the TLS connections naming a host of the Ingress go to its
// backend untouched, chosen by the ClientHello's server name on the
// HTTPS address and port that terminates the other hosts
// (model.Passthrough, render/passthrough.go). As in ingress-nginx the
// host's paths are not read on HTTPS, the backend is the host's first
// path's (or spec.defaultBackend's), and HAProxy never terminates: the
// Ingress's spec.tls and its other annotations do not apply to it there
// (the HTTP port serves the Ingress's paths as any Ingress's; HAProxy
// Ingress's key redirects them to HTTPS, as HAProxy Ingress does without
// ssl-passthrough-http-port). The backend is a Service port in mode tcp
// (a backend of its own, "_t"). Refused (an Event, the last good version
// kept): a rule without a host or with a wildcard (the server name is
// looked up exactly), a host without a backend, and auth-tls-secret
// (its clients could not be verified).

// parsePassthrough reads ssl-passthrough into s.passthrough (done for
// that key).
func (s *parsed) parsePassthrough(key, name, val string) (why string, done bool) {
	if name != "ssl-passthrough" {
		return "", false
	}
	b, err := strconv.ParseBool(val)
	if err != nil {
		return settings.ShowValue(val) + " is not true or false", true
	}
	s.passthrough = b
	if b && strings.HasPrefix(key, HAProxyPrefix) {
		s.forceSSL = true
	}
	return "", true
}

// passRoutes are the Ingress's passthrough names and their backends,
// or why it is refused. resolve gives a backend's model name in mode tcp.
func passRoutes(ing *netv1.Ingress, s parsed, resolve func(b *netv1.IngressBackend, at string) string) ([]model.PassRoute, string) {
	if s.authTLS.secret != "" {
		return nil, "ssl-passthrough with auth-tls-secret: HAProxy does not terminate the hosts' TLS, so it cannot verify their clients"
	}
	var out []model.PassRoute
	for ri, r := range ing.Spec.Rules {
		at := "spec.rules[" + strconv.Itoa(ri) + "]"
		host := strings.ToLower(r.Host)
		switch {
		case host == "":
			return nil, "ssl-passthrough: " + at + " has no host, and a connection is passed by its server name"
		case strings.HasPrefix(host, "*") || !model.ValidSNI(host):
			return nil, "ssl-passthrough: " + at + ".host " + settings.ShowValue(r.Host) + " is not an exact host name, and the server name is looked up exactly"
		}
		var b *netv1.IngressBackend
		switch {
		case r.HTTP != nil && len(r.HTTP.Paths) > 0:
			b, at = &r.HTTP.Paths[0].Backend, at+".http.paths[0].backend"
		case ing.Spec.DefaultBackend != nil:
			b, at = ing.Spec.DefaultBackend, "spec.defaultBackend"
		default:
			return nil, "ssl-passthrough: " + at + " (host " + host + ") has no backend"
		}
		if !slices.ContainsFunc(out, func(p model.PassRoute) bool { return p.SNI == host }) {
			out = append(out, model.PassRoute{SNI: host, Backend: resolve(b, at)})
		}
	}
	return out, ""
}

// passthrough is the HTTPS table's model.Passthrough: every Ingress's
// names, the oldest Ingress's backend for a name twice (units in
// precedence order). Never nil: the HTTPS frontend always has its
// splitter, so the first passthrough Ingress is map data too.
func passthrough(units []*unit) *model.Passthrough {
	p := &model.Passthrough{}
	seen := map[string]bool{}
	for _, u := range units {
		for _, r := range u.pass {
			if !seen[r.SNI] {
				seen[r.SNI] = true
				p.Routes = append(p.Routes, r)
			}
		}
	}
	slices.SortFunc(p.Routes, func(a, b model.PassRoute) int { return strings.Compare(a.SNI, b.SNI) })
	return p
}
