package runtimeapi

import (
	"path/filepath"
	"slices"

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

// httpMemos lower each HTTP frontend's table through a memo of its own
// (render.HTTPMapsMemo), by frontend name: a pass lowers only the
// actions and hosts that changed, and a kind whose entries are the last
// pass's keeps its file (bytes and lines) as built then. Used under the
// driver's mu.
type httpMemos map[string]*httpMemo

type httpMemo struct {
	maps  render.HTTPMapsMemo
	files map[string]httpFile // by kind
}

// httpFile is one kind's file as built from entries.
type httpFile struct {
	entries []render.HTTPMapEntry
	pf      patternFile
}

// httpMapFiles are the map files of cfg's HTTP frontends, lowered
// through memos (nil: none) and keeping in them only cfg's frontends;
// with edits, a file the memo knows the edit of carries it.
func httpMapFiles(dir string, cfg model.Config, memos *httpMemos, edits bool) []patternFile {
	var out []patternFile
	kept := httpMemos{}
	for _, f := range cfg.Frontends {
		if f.HTTP == nil {
			continue
		}
		m := &httpMemo{}
		var maps map[string][]render.HTTPMapEntry
		var changes map[string]render.HTTPMapEdit
		known := false
		if memos == nil {
			maps = render.HTTPMaps(f.HTTP)
		} else {
			if had := (*memos)[f.Name]; had != nil {
				m = had
			}
			kept[f.Name] = m
			maps = m.maps.Maps(f.HTTP)
			if edits {
				changes, known = m.maps.Edits() // render/httpedits.go
			}
		}
		files := make(map[string]httpFile, len(render.HTTPMapKinds))
		for _, kind := range render.HTTPMapKinds {
			path := render.HTTPMapFile(dir, f.Name, kind)
			hf, ok := m.files[kind]
			if ok && hf.pf.path == path && known && !changes[kind].Empty() {
				// The memo's edit from the file last built: a worker
				// holding that file needs only it (mapsync.go).
				from := hf.pf.body
				hf = newHTTPFile(path, maps[kind])
				hf.pf.edit = &fileEdit{from: from, edit: changes[kind]}
			} else if !ok || hf.pf.path != path || !slices.Equal(hf.entries, maps[kind]) {
				hf = newHTTPFile(path, maps[kind])
			}
			files[kind] = hf
			out = append(out, hf.pf)
		}
		m.files = files
	}
	if memos != nil {
		*memos = kept
	}
	return out
}

// newHTTPFile is the file of entries at path (its lines made only when
// a worker needs the file diffed or whole: patternFile.allLines).
func newHTTPFile(path string, entries []render.HTTPMapEntry) httpFile {
	return httpFile{entries: entries, pf: patternFile{path: path, body: render.HTTPMapContent(entries),
		what: "HTTP map " + filepath.Base(path), entries: entries}}
}
