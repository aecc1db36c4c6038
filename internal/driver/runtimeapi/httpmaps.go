package runtimeapi

import (
	"path/filepath"

	"github.com/haproxy-k8s-sync/haproxy-k8s-sync/internal/model"
	"github.com/haproxy-k8s-sync/haproxy-k8s-sync/internal/render"
)

// HTTP maps (render/http.go): an HTTP frontend's hosts, paths, header
// matches, actions, header changes, redirects and weighted backends are
// seven map files its fixed rules read. They are route maps to this
// driver (routeMapFiles lists them): written before a reload, pruned
// after one, and otherwise replaced in the running worker one atomic
// step per file (prepare/add/commit map), so an HTTPRoute added, changed
// or deleted reloads nothing unless it brings a header name or a backend
// the configuration lacks. The order of the files is HAProxy's view
// between two commits: the actions first, the hosts last, so a request
// never finds a new rule whose action is not there yet.

// httpMapFiles are the map files of cfg's HTTP frontends.
func httpMapFiles(dir string, cfg model.Config) []patternFile {
	var out []patternFile
	for _, f := range cfg.Frontends {
		if f.HTTP == nil {
			continue
		}
		maps := render.HTTPMaps(f.HTTP)
		for _, kind := range render.HTTPMapKinds {
			path := render.HTTPMapFile(dir, f.Name, kind)
			pf := patternFile{path: path, body: render.HTTPMapContent(maps[kind]), what: "HTTP map " + filepath.Base(path)}
			for _, e := range maps[kind] {
				pf.lines = append(pf.lines, e.Key+" "+e.Value)
			}
			out = append(out, pf)
		}
	}
	return out
}
