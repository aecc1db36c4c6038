package render

import (
	"hash/fnv"
	"strconv"
	"strings"

	"github.com/haproxy-k8s-sync/haproxy-k8s-sync/internal/model"
)

// A TLS Terminate listener's routes (a routed frontend that terminates
// TLS), with a map directory, are map data, not rules: a route new,
// moved or gone is a map change and no reload. The frontend knows the
// client's server name from its own handshake (ssl_fc_sni), looks it up
// in the frontend's server-name map as the HTTP frontends look up a host
// (exact, then "*." + the name less its first label, less two, ...
// WildcardDepth times, the longest wildcard first, then model.AnyHost
// for a route that takes any name), and the value is the route's id: a
// number from its server name (RouteID). The backends map then takes
// id * pickRange + the connection's random number, by ranges (map_int
// "lo:hi") that cut each route's share of [0, pickRange) by its weights,
// as the route maps of routemaps.go do per route.

// TLSRouteSNIMapFile is the server-name map of terminating frontend fe
// under dir.
func TLSRouteSNIMapFile(dir, fe string) string { return dir + "/" + fe + ".tls.sni.map" }

// TLSRouteBackendsMapFile is the backends map of terminating frontend fe
// under dir.
func TLSRouteBackendsMapFile(dir, fe string) string { return dir + "/" + fe + ".tls.backends.map" }

// RoutesAsMaps reports whether f's routes are the server-name and
// backends maps (with a map directory, a routed frontend that terminates
// TLS).
func RoutesAsMaps(f model.Frontend, mapDir string) bool {
	return mapDir != "" && f.Terminates() && f.Routed()
}

// maxRouteID bounds a route's id: id * pickRange + pickRange stays far
// within HAProxy's 64-bit integers.
const maxRouteID = 1 << 31

// RouteIDs gives each route of f with a valid server name ("" too) its id:
// a hash of the name, so a route keeps its id whatever other routes come
// and go, probing to the next free id on the rare collision (routes in
// f's order, the producer's precedence). Routes left out get none.
func RouteIDs(f model.Frontend) map[int]int64 {
	out := map[int]int64{}
	used := map[int64]bool{}
	for i, r := range f.Routes {
		if r.SNI != "" && !model.ValidSNI(r.SNI) {
			continue
		}
		out[i] = freeID(used, strings.ToLower(r.SNI))
	}
	return out
}

// freeID is the id of s: a hash of s in [1, maxRouteID), or the next
// one not used, which it marks used.
func freeID(used map[int64]bool, s string) int64 {
	h := fnv.New32a()
	h.Write([]byte(s))
	id := int64(h.Sum32()%(maxRouteID-1)) + 1
	for used[id] {
		id = id%(maxRouteID-1) + 1
	}
	used[id] = true
	return id
}

// TLSRouteSNIEntries are the lines of f's server-name map: each route's
// name (model.AnyHost for none), lower case, and its id. A name twice
// keeps its first route's.
func TLSRouteSNIEntries(f model.Frontend) []MapEntry {
	ids := RouteIDs(f)
	seen := map[string]bool{}
	var out []MapEntry
	for i, r := range f.Routes {
		id, ok := ids[i]
		if !ok {
			continue
		}
		key := strings.ToLower(r.SNI)
		if key == "" {
			key = model.AnyHost
		}
		if seen[key] {
			continue
		}
		seen[key] = true
		out = append(out, MapEntry{Key: key, Value: strconv.FormatInt(id, 10)})
	}
	return out
}

// TLSRouteBackendEntries are the lines of f's backends map: per route
// with an id, its backends' ranges of the random number, offset by
// id * pickRange.
func TLSRouteBackendEntries(f model.Frontend) []MapEntry {
	ids := RouteIDs(f)
	var out []MapEntry
	for i, r := range f.Routes {
		id, ok := ids[i]
		if !ok {
			continue
		}
		base := id * pickRange
		weightRanges(r.Backends, pickRange, func(lo, hi int64, name string) {
			out = append(out, MapEntry{Key: strconv.FormatInt(base+lo, 10) + ":" + strconv.FormatInt(base+hi, 10), Value: name})
		})
	}
	return out
}

// tlsRouteMapRules writes the rules of a terminating frontend's routes
// reading its two maps (after the random number's rule).
func tlsRouteMapRules(w func(...string), f model.Frontend, dir string) {
	sni, bes := TLSRouteSNIMapFile(dir, f.Name), TLSRouteBackendsMapFile(dir, f.Name)
	const missing = " if !{ var(sess.rid) -m found }"
	w("\ttcp-request content set-var(sess.sni) ssl_fc_sni,lower")
	w("\ttcp-request content set-var(sess.rid) var(sess.sni),map_str(" + sni + ")")
	for i := 2; i < 2+WildcardDepth; i++ {
		w("\ttcp-request content set-var-fmt(sess.sw) \"*.%[var(sess.sni),field(" + strconv.Itoa(i) + ",.,0)]\"" + missing)
		w("\ttcp-request content set-var(sess.rid) var(sess.sw),map_str(" + sni + ")" + missing)
	}
	w("\ttcp-request content set-var(sess.rid) str(" + model.AnyHost + "),map_str(" + sni + ")" + missing)
	w("\tuse_backend %[var(sess.rid),mul(" + strconv.Itoa(pickRange) + "),add(sess.pick),map_int(" + bes + ")] if { var(sess.rid) -m found }")
}
