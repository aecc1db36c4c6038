package runtimeapi

import (
	"bytes"
	"slices"
	"strings"

	"github.com/haproxy-k8s-sync/haproxy-k8s-sync/internal/render"
)

// Map files changed entry by entry (issues 29 and 30). A map's file is
// always written whole (filevers.go), but the running worker is told
// only the difference between the entries it holds (mapsync.go keeps
// them) and the wanted ones: `add map` for a new key, `set map` for a
// key whose value changed, `del map` for a key gone. A route changed
// among thousands is then a few commands, not the thousands of a whole
// replace (`prepare`/`add @V`/`commit map`), which stays the way of a
// map whose running entries are unknown and cannot be read back
// (mapread.go).
//
// What a request sees between two commands. Each command changes one
// key atomically. A map_str lookup reads one key; a map_beg lookup takes
// the longest key that is a prefix of its sample (a prefix tree); a
// request may read several keys of one map in turn (the host, then its
// wildcards, then any host). So the order, within a map and across the
// maps of one pass:
//
//  1. Every `set` and `add` first, file by file in the order the files
//     are given, then every `del`, file by file in the reverse order.
//     Between two commands a map then holds the old keys and the new
//     ones (the new values where both have the key) and loses a key only
//     once every key is in: a lookup of one key, exact or longest
//     prefix, finds what the old map or the new map gives it, never a
//     miss that neither gives (a path moved from /a to /b is found at
//     either while it moves; a shorter prefix never answers in between).
//  2. The files are given targets first (routeMapFiles): a map whose values
//     are keys of another map (host -> its paths' group -> the group's
//     rules -> the rule's action -> backends, headers, redirects; a
//     listener key -> its PROXY flag) comes after the map it points
//     into. So an entry is added only once what it names is there, and
//     deleted before what it names goes: a request never follows a
//     reference to an entry that is missing (no 404 or 500 for a route
//     that is in the old table and in the new one).
//
// What the order cannot give: a request's lookups are not one atomic
// step, so one that reads several keys while a pass runs (the match
// map's candidates by rank, a host and its wildcards) may combine an old
// entry with a new one, for the microseconds between two commands; the
// whole replace had the same window between its files. Identifiers that
// keep their name while their content changes (render's ids are by
// position) widen it; see docs/gateway.md.

// mapEdit is what one map file needs so the running worker holds want:
// a whole replace (whole: every line), or the difference from the
// entries it holds.
type mapEdit struct {
	path string
	what string // for logs: what the file is of
	body []byte // the file's bytes
	// keyMap: a fixed listener's map (patternFile.keyMap): its edits
	// change listened addresses or ports, not routes (logMapEdits).
	keyMap bool
	whole  bool
	lines  []string // whole: the file's lines
	set    []render.MapEntry
	add    []render.MapEntry
	del    []string // keys
	want   map[string]string
	base   map[string]string // with a known edit (knownEdit): what the worker holds, want once edited
	// pending: the file's bytes are made after the edit is sent (body
	// nil until then: pushMaps)
	pending bool
	ver     uint64 // the file's (patternFile.ver)
}

// empty reports whether the edit changes nothing.
func (e mapEdit) empty() bool {
	return !e.whole && len(e.set) == 0 && len(e.add) == 0 && len(e.del) == 0
}

// count is how many commands the edit sends (a whole replace: its
// prepare, its lines and its commit).
func (e mapEdit) count() int {
	if e.whole {
		return len(e.lines) + 2
	}
	return len(e.set) + len(e.add) + len(e.del)
}

// mapEntries reads a map file's lines ("key value"; a key has no space:
// every key passed model's validators or is made of ids) into entries,
// and reports false when a key repeats (HAProxy would keep both, which
// only a whole replace reproduces).
func mapEntries(lines []string) (map[string]string, bool) {
	out := make(map[string]string, len(lines))
	for _, l := range lines {
		k, v, _ := strings.Cut(l, " ")
		if _, dup := out[k]; dup {
			return out, false
		}
		out[k] = v
	}
	return out, true
}

// diffMap is the edit from held (the running entries) to the file's
// lines: keys new to held added, keys whose value changed set, keys gone
// deleted. The adds and sets keep the file's order, the deletes are
// sorted: the same edit for the same maps. A file whose keys repeat, or
// whose difference takes as many commands as the file, is replaced
// whole.
func diffMap(path string, held map[string]string, lines []string) mapEdit {
	want, ok := mapEntries(lines)
	e := mapEdit{path: path, want: want}
	if !ok || held == nil {
		e.whole, e.lines = true, lines
		return e
	}
	for _, l := range lines {
		k, v, _ := strings.Cut(l, " ")
		old, had := held[k]
		switch {
		case !had:
			e.add = append(e.add, render.MapEntry{Key: k, Value: v})
		case old != v:
			e.set = append(e.set, render.MapEntry{Key: k, Value: v})
		}
	}
	for k := range held {
		if _, keep := want[k]; !keep {
			e.del = append(e.del, k)
		}
	}
	slices.Sort(e.del)
	if e.count() >= len(lines)+2 {
		// No cheaper than a whole replace, which is one atomic step (a
		// route map's few ranges, a map emptied): replace it whole.
		return mapEdit{path: path, want: want, whole: true, lines: lines}
	}
	return e
}

// mapCommands are the Runtime API commands of edits, given targets first
// (see the order above): each whole replace's lines and commit and each
// edit's sets and adds, edit by edit; then the deletes, the last edit's
// first. versions holds the version `prepare map` created for each whole
// replace, by path.
func mapCommands(edits []mapEdit, versions map[string]string) []string {
	var cmds []string
	for _, e := range edits {
		if e.whole {
			v := versions[e.path]
			for _, l := range e.lines {
				cmds = append(cmds, "add map @"+v+" "+e.path+" "+cliMapLine(l))
			}
			cmds = append(cmds, "commit map @"+v+" "+e.path)
			continue
		}
		for _, m := range e.set {
			cmds = append(cmds, "set map "+e.path+" "+m.Key+" "+CLIValue(m.Value))
		}
		for _, m := range e.add {
			cmds = append(cmds, "add map "+e.path+" "+m.Key+" "+CLIValue(m.Value))
		}
	}
	for i := len(edits) - 1; i >= 0; i-- {
		for _, k := range edits[i].del {
			cmds = append(cmds, "del map "+edits[i].path+" "+k)
		}
	}
	return cmds
}

// fileEdit is an edit a file's maker knows (render.HTTPMapsMemo's):
// what takes a worker holding the file's bytes from to this file's
// entries, without diffing the whole files (issue 30).
type fileEdit struct {
	from []byte
	// fromVer: the version (patternFile.ver) it starts from, whose bytes
	// (from) may never have been made; 0: from's bytes.
	fromVer uint64
	edit    render.HTTPMapEdit
}

// knownEdit is the edit of f for a worker holding held (its entries,
// changed in place once sent: see applyTo), and whether f's edit starts
// from what the worker holds.
func knownEdit(f patternFile, held heldMap) (mapEdit, bool) {
	if f.edit == nil || held.entries == nil {
		return mapEdit{}, false
	}
	if f.edit.fromVer != 0 && held.ver != 0 {
		if held.ver != f.edit.fromVer {
			return mapEdit{}, false
		}
	} else if f.edit.fromVer != 0 && f.edit.from == nil || !bytes.Equal(held.body, f.edit.from) {
		return mapEdit{}, false
	}
	e := mapEdit{path: f.path, base: held.entries, del: f.edit.edit.Del}
	for _, a := range f.edit.edit.Add {
		e.add = append(e.add, render.MapEntry{Key: a.Key, Value: a.Value})
	}
	for _, s := range f.edit.edit.Set {
		e.set = append(e.set, render.MapEntry{Key: s.Key, Value: s.Value})
	}
	if e.count() >= f.count()+2 {
		return mapEdit{}, false // no cheaper than the whole file: diffMap decides
	}
	return e, true
}

// wanted is what the worker holds once e is sent: e.want, or e's base
// edited in place.
func (e mapEdit) wanted() map[string]string {
	if e.base == nil {
		return e.want
	}
	for _, a := range e.set {
		e.base[a.Key] = a.Value
	}
	for _, a := range e.add {
		e.base[a.Key] = a.Value
	}
	for _, k := range e.del {
		delete(e.base, k)
	}
	return e.base
}
