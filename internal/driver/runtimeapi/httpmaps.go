package runtimeapi

import (
	"path/filepath"
	"slices"
	"sync/atomic"

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
	files map[string]httpFile // by kind, as last built (each of its version)
	// vers: by kind, the version of the entries the memo's last table
	// gives (httpVersion; 0: none yet); prev, the version the last
	// Update's edit of that kind starts from (0: no edit known); sizes,
	// the entries' count of each kind's version. A pass that sends the
	// memo's edit needs no file built (the files are written after the
	// pass, duefiles.go): the worker is said to hold a version, and the
	// next edit starts from it.
	vers, prev map[string]uint64
	sizes      map[string]int
	// built: files are those of the table last given to maps.Update.
	built bool
}

// httpFile is one kind's file as built from entries.
type httpFile struct {
	entries []render.HTTPMapEntry
	pf      patternFile
}

// httpVersion numbers the versions of the HTTP maps' entries (every
// driver's: a version names one content of one file).
var httpVersion atomic.Uint64

// update gives m the table h (maps.Update) and moves each kind's version
// on: a kind the edit changes, or any kind when the edit is not known,
// gets a new version, from its last one when the edit is known.
func (m *httpMemo) update(h *model.HTTP) (map[string]render.HTTPMapEdit, bool) {
	changes, known := m.maps.Update(h) // render/httpmemo.go
	if m.vers == nil {
		m.vers, m.prev, m.sizes = map[string]uint64{}, map[string]uint64{}, map[string]int{}
	}
	for _, kind := range render.HTTPMapKinds {
		e, v := changes[kind], m.vers[kind]
		switch {
		case known && e.Empty() && v != 0:
			m.prev[kind] = 0
			continue
		case known && v != 0:
			m.prev[kind] = v
			if m.sizes[kind] >= 0 {
				m.sizes[kind] += len(e.Add) - len(e.Del)
			}
		default:
			m.prev[kind], m.sizes[kind] = 0, -1 // counted by the next build
		}
		m.vers[kind] = httpVersion.Add(1)
		m.built = false
	}
	return changes, known
}

// build makes the files of m's table whole (maps.Build), keeping each
// kind's file whose version, or else entries, are the last built's, and
// returns them in HTTPMapKinds' order, carrying no edit.
func (m *httpMemo) build(dir, name string) []patternFile {
	if m.built {
		out := make([]patternFile, 0, len(render.HTTPMapKinds))
		for _, kind := range render.HTTPMapKinds {
			out = append(out, m.files[kind].pf)
		}
		return out
	}
	maps := m.maps.Build() // render/httpmemo.go
	files := make(map[string]httpFile, len(render.HTTPMapKinds))
	out := make([]patternFile, 0, len(render.HTTPMapKinds))
	for _, kind := range render.HTTPMapKinds {
		path, v := render.HTTPMapFile(dir, name, kind), m.vers[kind]
		hf, ok := m.files[kind]
		switch {
		case ok && hf.pf.path == path && hf.pf.ver == v:
		case ok && hf.pf.path == path && slices.Equal(hf.entries, maps[kind]):
			hf.pf.ver = v
		default:
			hf = newHTTPFile(path, maps[kind])
			hf.pf.ver = v
		}
		files[kind], m.sizes[kind] = hf, len(hf.entries)
		out = append(out, hf.pf)
	}
	m.files, m.built = files, true
	return out
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
			kept[f.Name], u.m = m, m
			changes, known := m.update(f.HTTP)
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
			f, known := u.early(dir, kind)
			ok = ok && known
			early = append(early, f)
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

// early is u's file of kind before any is built: the last one built
// when it is of the memo's version; otherwise pending (its bytes made
// later), with the memo's edit from the version before. false: the
// edit of kind is not known (the file must be built first).
func (u httpUpdated) early(dir, kind string) (patternFile, bool) {
	m := u.m
	path, v := render.HTTPMapFile(dir, u.name, kind), m.vers[kind]
	if hf, ok := m.files[kind]; ok && hf.pf.path == path && hf.pf.ver == v {
		return hf.pf, true
	}
	f := patternFile{path: path, what: "HTTP map " + filepath.Base(path), pending: true, ver: v, size: m.sizes[kind]}
	switch e := u.changes[kind]; {
	case m.sizes[kind] < 0:
		return f, false
	case e.Empty():
		// The version the worker holds, if it does (mapEdits); built
		// first otherwise.
	case m.prev[kind] == 0:
		return f, false
	default:
		f.edit = &fileEdit{fromVer: m.prev[kind], edit: e}
		if hf, ok := m.files[kind]; ok && hf.pf.ver == m.prev[kind] {
			f.edit.from = hf.pf.body
		}
	}
	return f, true
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
	var from map[string][]byte // the bytes of the versions the edits start from, when built
	for _, kind := range render.HTTPMapKinds {
		if hf, ok := m.files[kind]; ok && u.known && m.prev[kind] != 0 && hf.pf.ver == m.prev[kind] {
			if from == nil {
				from = map[string][]byte{}
			}
			from[kind] = hf.pf.body
		}
	}
	out := m.build(dir, u.name)
	for i, kind := range render.HTTPMapKinds {
		if u.known && m.prev[kind] != 0 && !u.changes[kind].Empty() {
			// The memo's edit from the version before: a worker
			// holding that needs only it (mapsync.go).
			out[i].edit = &fileEdit{fromVer: m.prev[kind], from: from[kind], edit: u.changes[kind]}
		}
	}
	return out
}

// newHTTPFile is the file of entries at path (its lines made only when
// a worker needs the file diffed or whole: patternFile.allLines).
func newHTTPFile(path string, entries []render.HTTPMapEntry) httpFile {
	return httpFile{entries: entries, pf: patternFile{path: path, body: render.HTTPMapContent(entries),
		what: "HTTP map " + filepath.Base(path), entries: entries}}
}
