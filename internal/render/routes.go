package render

import (
	"strconv"
	"strings"

	"github.com/haproxy-k8s-sync/haproxy-k8s-sync/internal/model"
	"github.com/haproxy-k8s-sync/haproxy-k8s-sync/internal/settings"
)

// pickRange is the range of the random number that splits a route's
// connections between its backends by weight: fine enough that rounding
// moves a share by less than one in a million.
const pickRange = 1 << 20

// writeRoutes writes the rules of a frontend with Routes (Gateway API
// listeners): routes by TLS server name wait for the ClientHello, and a
// route with several backends draws one random number per connection,
// whose range is cut by their weights. Names come from the model only:
// server names passed model.ValidSNI, backends are model names.
// With a map directory, the routes read their backends from route maps
// (routemaps.go) instead, and every routed frontend draws.
func writeRoutes(w func(...string), f model.Frontend, mapDir string) {
	// The draw comes first: "accept" ends the content rules.
	for _, r := range f.Routes {
		if len(r.Backends) > 1 || mapDir != "" {
			w("\ttcp-request content set-var(sess.pick) rand(" + strconv.Itoa(pickRange) + ")")
			break
		}
	}
	if f.BySNI() && !f.Terminates() {
		delay := f.InspectDelay
		if delay <= 0 {
			delay = model.DefaultInspectDelay
		}
		w("\ttcp-request inspect-delay", settings.FormatDuration(delay))
		w("\ttcp-request content accept if { req.ssl_hello_type 1 }")
	}
	if RoutesAsMaps(f, mapDir) {
		tlsRouteMapRules(w, f, mapDir) // tlsroutemaps.go
		return
	}
	if mapDir != "" {
		routeMapRules(w, f, mapDir)
		return
	}
	for _, r := range f.Routes {
		if r.SNI != "" && !model.ValidSNI(r.SNI) {
			continue // never a rule that would take every connection
		}
		match := sniMatchOf(f, r.SNI)
		var total int64
		for _, b := range r.Backends {
			total += max(int64(b.Weight), 0)
		}
		if total == 0 {
			continue
		}
		var sum int64
		for _, b := range r.Backends {
			if b.Weight <= 0 {
				continue
			}
			sum += int64(b.Weight)
			cond := match
			if sum < total {
				cond += " { var(sess.pick) -m int lt " + strconv.FormatInt(sum*pickRange/total, 10) + " }"
			}
			if cond == "" {
				w("\tuse_backend", b.Name)
			} else {
				w("\tuse_backend", b.Name, "if"+cond)
			}
		}
	}
}

// sniMatchOf is the condition of a route of f's server name: exact, or
// the suffix after "*." for a wildcard; "" for a route that takes any.
// A frontend that terminates TLS (a TLS Terminate listener) knows the
// name from its own handshake (ssl_fc_sni) and waits for no ClientHello
// in the stream, which is decrypted by then; others read the ClientHello
// (req.ssl_sni).
func sniMatchOf(f model.Frontend, sni string) string {
	if f.Terminates() {
		return sniFetchMatch("ssl_fc_sni", sni)
	}
	return sniFetchMatch("req.ssl_sni", sni)
}

func sniFetchMatch(fetch, sni string) string {
	if sni == "" {
		return ""
	}
	if suffix, ok := strings.CutPrefix(sni, "*"); ok {
		return " { " + fetch + " -i -m end " + suffix + " }"
	}
	return " { " + fetch + " -i " + sni + " }"
}
