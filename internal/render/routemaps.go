package render

import (
	"bytes"
	"strconv"

	"github.com/haproxy-k8s-sync/haproxy-k8s-sync/internal/model"
)

// Route maps (with Options.ACLDir): each route of a routed frontend picks
// its backend from a map file of its own, keyed by ranges of the
// connection's random number (map_int matches "lo:hi"), so the config
// names the file only, the structure does not depend on the weights or
// on which of the config's backends a route sends to, and the driver
// changes them through the Runtime API (prepare/add/commit map) with no
// reload.

// RouteMapFile is the map of route i of frontend fe under dir.
func RouteMapFile(dir, fe string, i int) string {
	return dir + "/" + fe + ".r" + strconv.Itoa(i) + ".map"
}

// RouteMapEntry is one line of a route map: the random numbers lo..hi
// (of [0, pickRange)) go to Backend.
type RouteMapEntry struct {
	Key     string // "lo:hi"
	Backend string
}

// RouteMapEntries cuts [0, pickRange) by the weights of r's backends, in
// order (a backend whose share rounds to nothing gets no range). No entry
// when no backend has a weight: no connection matches.
func RouteMapEntries(r model.Route) []RouteMapEntry {
	var out []RouteMapEntry
	weightRanges(r.Backends, pickRange, func(lo, hi int64, name string) {
		out = append(out, RouteMapEntry{strconv.FormatInt(lo, 10) + ":" + strconv.FormatInt(hi, 10), name})
	})
	return out
}

// weightRanges cuts [0, n) by the weights of bs, in order, and calls each
// with every backend's range lo..hi (none for a backend whose share
// rounds to nothing, or when no backend has a weight).
func weightRanges(bs []model.WeightedBackend, n int64, each func(lo, hi int64, name string)) {
	var total int64
	for _, b := range bs {
		total += max(int64(b.Weight), 0)
	}
	if total == 0 {
		return
	}
	var sum, lo int64
	for _, b := range bs {
		if b.Weight <= 0 {
			continue
		}
		sum += int64(b.Weight)
		hi := sum*n/total - 1
		if hi >= lo {
			each(lo, hi, b.Name)
		}
		lo = hi + 1
	}
}

// RouteMapContent is what RouteMapFile holds for r.
func RouteMapContent(r model.Route) []byte {
	var b bytes.Buffer
	for _, e := range RouteMapEntries(r) {
		b.WriteString(e.Key + " " + e.Backend + "\n")
	}
	return b.Bytes()
}

// routeMapRules writes the rules of f's routes reading their maps.
func routeMapRules(w func(...string), f model.Frontend, dir string) {
	for i, r := range f.Routes {
		if r.SNI != "" && !model.ValidSNI(r.SNI) {
			continue
		}
		rule := "\tuse_backend %[var(sess.pick),map_int(" + RouteMapFile(dir, f.Name, i) + ")]"
		if m := sniMatchOf(f, r.SNI); m != "" {
			rule += " if" + m
		}
		w(rule)
	}
}
