package runtimeapi

import (
	"path/filepath"

	"github.com/haproxy-k8s-sync/haproxy-k8s-sync/internal/model"
	"github.com/haproxy-k8s-sync/haproxy-k8s-sync/internal/render"
)

// tlsRouteMapFiles are the server-name and backends maps of cfg's
// frontends whose routes are maps (render/tlsroutemaps.go: TLS Terminate
// listeners), pushed like the route maps: a TLSRoute added, moved or
// removed there changes them, no reload. The backends map comes first:
// the server-name map points into it.
func tlsRouteMapFiles(dir string, cfg model.Config) []patternFile {
	var out []patternFile
	for _, f := range cfg.Frontends {
		if !render.RoutesAsMaps(f, dir) {
			continue
		}
		for _, m := range []struct {
			path    string
			entries []render.MapEntry
		}{
			{render.TLSRouteBackendsMapFile(dir, f.Name), render.TLSRouteBackendEntries(f)},
			{render.TLSRouteSNIMapFile(dir, f.Name), render.TLSRouteSNIEntries(f)},
		} {
			pf := patternFile{path: m.path, body: render.MapContent(m.entries), what: "TLS route map " + filepath.Base(m.path)}
			for _, e := range m.entries {
				pf.lines = append(pf.lines, e.Key+" "+e.Value)
			}
			out = append(out, pf)
		}
	}
	return out
}
