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
	// built: files are those of the table last given to maps.Update (a
	// pass that updated the memo and never built its files leaves the
	// memo's edit counted from a table no file holds: no edit from them).
	built bool
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
	_, build := httpMapUpdate(dir, cfg, memos, edits)
	return build()
}

// httpUpdated is one HTTP frontend's table given to its memo, and the
// memo's edit from the last table.
type httpUpdated struct {
	name    string
	h       *model.HTTP
	m       *httpMemo // nil: no memo
	changes map[string]render.HTTPMapEdit
	known   bool
}

// httpMapUpdate gives each HTTP frontend's memo its table (Update: the
// actions and hosts that changed lowered, the edit counted, no whole
// maps) and returns build, which makes the files whole (Build), to be
// called once after. Before that, when every kind's file of every
// frontend is the last one built or that one with the memo's edit,
// early lists them in build's order, an edited one pending (its bytes
// made by build): the edit can go to the worker before the whole maps
// are made (issue 30; mapsync.go). early is nil otherwise.
func httpMapUpdate(dir string, cfg model.Config, memos *httpMemos, edits bool) (early []patternFile, build func() []patternFile) {
	var ups []httpUpdated
	kept := httpMemos{}
	ok := memos != nil && edits
	for _, f := range cfg.Frontends {
		if f.HTTP == nil {
			continue
		}
		u := httpUpdated{name: f.Name, h: f.HTTP}
		if memos != nil {
			m := (*memos)[f.Name]
			if m == nil {
				m = &httpMemo{}
			}
			if !m.built {
				m.files = nil
			}
			kept[f.Name], u.m = m, m
			changes, known := m.maps.Update(f.HTTP) // render/httpmemo.go
			m.built = false
			if edits {
				u.changes, u.known = changes, known
			}
		}
		ups = append(ups, u)
		ok = ok && u.known
		for _, kind := range render.HTTPMapKinds {
			if !ok {
				break
			}
			path := render.HTTPMapFile(dir, f.Name, kind)
			hf, had := u.m.files[kind]
			switch e := u.changes[kind]; {
			case !had || hf.pf.path != path:
				ok = false
			case e.Empty():
				early = append(early, hf.pf)
			default:
				early = append(early, patternFile{path: path, what: "HTTP map " + filepath.Base(path),
					edit: &fileEdit{from: hf.pf.body, edit: e}, pending: true, size: len(hf.entries) + len(e.Add) - len(e.Del)})
			}
		}
	}
	if memos != nil {
		*memos = kept
	}
	build = func() []patternFile {
		var out []patternFile
		for _, u := range ups {
			out = append(out, u.files(dir)...)
		}
		return out
	}
	if !ok {
		return nil, build
	}
	return early, build
}

// files makes u's files whole: from its memo's table (Build), keeping
// each kind's file whose entries are the last built's; a file the memo
// knows the edit of carries it.
func (u httpUpdated) files(dir string) []patternFile {
	if u.m == nil {
		maps := render.HTTPMaps(u.h)
		out := make([]patternFile, 0, len(render.HTTPMapKinds))
		for _, kind := range render.HTTPMapKinds {
			out = append(out, newHTTPFile(render.HTTPMapFile(dir, u.name, kind), maps[kind]).pf)
		}
		return out
	}
	m := u.m
	maps := m.maps.Build() // render/httpmemo.go
	files := make(map[string]httpFile, len(render.HTTPMapKinds))
	out := make([]patternFile, 0, len(render.HTTPMapKinds))
	for _, kind := range render.HTTPMapKinds {
		path := render.HTTPMapFile(dir, u.name, kind)
		hf, ok := m.files[kind]
		if ok && hf.pf.path == path && u.known && !u.changes[kind].Empty() {
			// The memo's edit from the file last built: a worker
			// holding that file needs only it (mapsync.go).
			from := hf.pf.body
			hf = newHTTPFile(path, maps[kind])
			hf.pf.edit = &fileEdit{from: from, edit: u.changes[kind]}
		} else if !ok || hf.pf.path != path || !slices.Equal(hf.entries, maps[kind]) {
			hf = newHTTPFile(path, maps[kind])
		}
		files[kind] = hf
		out = append(out, hf.pf)
	}
	m.files, m.built = files, true
	return out
}

// newHTTPFile is the file of entries at path (its lines made only when
// a worker needs the file diffed or whole: patternFile.allLines).
func newHTTPFile(path string, entries []render.HTTPMapEntry) httpFile {
	return httpFile{entries: entries, pf: patternFile{path: path, body: render.HTTPMapContent(entries),
		what: "HTTP map " + filepath.Base(path), entries: entries}}
}
