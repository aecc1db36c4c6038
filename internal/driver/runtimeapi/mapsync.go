package runtimeapi

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"strings"
	"time"

	"github.com/haproxy-k8s-sync/haproxy-k8s-sync/internal/driver"
	"github.com/haproxy-k8s-sync/haproxy-k8s-sync/internal/haproxy"
)

// heldMaps is what the running worker holds of each map file pushed
// entry by entry (route, HTTP and listener maps), by path: exact while
// known. A worker (pid) that is not the one the entries were read for,
// a push that failed, a path never pushed or loaded: unknown, and that
// file's entries are read back from the worker (`show map`, mapread.go)
// and diffed, or, if the read fails, replaced whole once (mapdiff.go);
// then by difference again.
//
// A map file the worker's configuration does not read (an HTTP
// frontend's headers map while no rule changes a header) is unknown to
// the worker's Runtime API: it is never pushed, only written (a reload
// that makes the configuration read it reads the file). read lists those
// it reads, learned once per worker (`show map`).
type heldMaps struct {
	pid   string
	files map[string]heldMap
	read  map[string]bool // nil: not learned for pid
}

// heldMap is one file as the worker holds it: the file's bytes it was
// given (so a file whose bytes did not change needs no diff) and its
// entries.
type heldMap struct {
	body    []byte // the file's own bytes (never changed once made: not copied); nil: not made yet
	ver     uint64 // the file's version (patternFile.ver), 0: known by body alone
	entries map[string]string
	// readBack: the entries were read from the worker (mapread.go), the
	// bytes it was given are not known (body nil): diffed by entries.
	readBack bool
}

// reads reports whether the worker pid's configuration reads path, and
// whether that is known.
func (h *heldMaps) reads(pid, path string) (reads, known bool) {
	if h.pid != pid || h.read == nil {
		return false, false
	}
	return h.read[path], true
}

// of returns what the worker pid holds of path, if known.
func (h *heldMaps) of(pid, path string) (heldMap, bool) {
	if h.pid != pid {
		return heldMap{}, false
	}
	m, ok := h.files[path]
	return m, ok
}

// hold records that the worker pid holds f.
func (h *heldMaps) hold(pid string, f patternFile, entries map[string]string) {
	if h.pid != pid {
		h.pid, h.read = pid, nil
	}
	if h.files == nil {
		h.files = make(map[string]heldMap)
	}
	h.files[f.path] = heldMap{body: f.body, ver: f.ver, entries: entries}
}

// loaded records that the worker pid read every file of want from disk
// (a reload just started it).
func (h *heldMaps) loaded(pid string, want []patternFile) {
	h.pid, h.files, h.read = pid, make(map[string]heldMap, len(want)), nil
	for _, f := range want {
		if entries, ok := mapEntries(f.allLines()); ok {
			h.files[f.path] = heldMap{body: f.body, ver: f.ver, entries: entries}
		}
	}
}

// forget makes every file unknown.
func (h *heldMaps) forget() { h.files = nil }

// unknown makes the files of paths unknown for the worker pid (all of
// them if it is not the worker the entries are for).
func (h *heldMaps) unknown(pid string, paths map[string]bool) {
	if h.pid != pid {
		h.pid, h.files, h.read = pid, nil, nil
		return
	}
	for p := range paths {
		delete(h.files, p)
	}
}

// pushMaps brings the running worker's maps to want, by difference where
// the driver knows what the worker holds, whole otherwise, in one batch
// (after one round trip for the `prepare` of whole replaces, if any),
// then writes the files of want whose bytes changed, whole. It returns
// the edits sent. On failure what the worker holds is unknown: every
// file is replaced whole next time.
//
// The worker is told before the files are written (a file's write took
// hundreds of milliseconds for the megabyte of a large table on a busy
// disk while it was synced; it is not any more, fileSet.unsynced): a
// request is served by the new route that much sooner. No
// worker of this driver starts in between (a reload writes every file
// first, under the same lock); one started behind its back reads the
// file before the change, and being a worker of another pid, it gets
// every file whole in the next pass.
//
// With build (httpMapUpdate), want's pending files are not made yet:
// when each of them goes to the worker by its edit, the batch is sent
// first and build makes every file after it (the HTTP maps built whole
// after a new route's entries are served: issue 30); otherwise build
// makes them before anything is sent. Either way the files written are
// build's: what a reload reads afterwards is what the worker runs. While
// Run runs, the files go to its writer after the pass (duefiles.go), and
// those of a batch sent by the memo's edits are not even built here; a
// reload writes every file itself. A controller stopped between the batch and the
// write leaves files older than the worker's maps; the next process
// knows nothing the worker holds (heldMaps is per process), reads the
// worker's maps back and sends the difference from the files it writes
// (mapread.go), as after any restart.
func (d *HAProxy) pushMaps(ctx context.Context, s *fileSet, want []patternFile, build func() []patternFile, res *driver.Result) ([]mapEdit, error) {
	if _, listed := d.held.reads(d.pid, ""); !listed {
		if err := d.listMaps(ctx); err != nil {
			d.known = false
			return nil, err
		}
	}
	whole := build != nil // every HTTP map's file made in this pass (unless left: duefiles.go)
	if build != nil && want == nil {
		want, build = build(), nil
	}
	if !d.opts.WholeMaps {
		t := time.Now()
		d.readMaps(ctx, d.held.unknownMaps(d.pid, want)) // mapread.go
		res.Runtime += time.Since(t)
	}
	edits, early := d.mapEdits(want)
	if !early && build != nil {
		want, build = build(), nil
		edits, _ = d.mapEdits(want)
	}
	var sendErr error
	if len(edits) > 0 {
		t := time.Now()
		n, err := d.sendMapEdits(ctx, edits)
		res.Runtime += time.Since(t)
		if err != nil {
			d.held.forget()
			d.known = false
			res.OpsFailed += n
			sendErr = err
		} else {
			res.Ops += n
			d.mapOps += n
		}
	}
	t := time.Now()
	left := false
	if build != nil {
		if testHookMapsSent != nil && slices.ContainsFunc(edits, func(e mapEdit) bool { return e.pending }) {
			testHookMapsSent()
		}
		if left = sendErr == nil && d.due.later(); !left {
			want = build() // the files made after the worker is told: part of their write
		}
	}
	// While Run runs, the files made are written after the pass too
	// (duefiles.go); after a write there failed, the pass writes what is
	// due first, then its own.
	later := sendErr == nil && d.due.later()
	var dueErr error
	if !later && d.due.on {
		dueErr = d.writeDueNow(false)
	}
	if sendErr == nil {
		var made map[string][]byte // the pending files' bytes, by path
		for _, e := range edits {
			if e.body == nil && e.pending {
				if made == nil {
					made = make(map[string][]byte)
					for _, f := range want {
						made[f.path] = f.body
					}
				}
				e.body = made[e.path]
			}
			d.held.hold(d.pid, patternFile{path: e.path, body: e.body, ver: e.ver}, e.wanted())
		}
	}
	// Written even when the worker failed them: a HAProxy that starts
	// reads the wanted maps, and the running one gets them whole next time.
	var wrote []patternFile
	var err error
	if later && s.due != nil {
		// The listener's maps in the pass still: a TPROXY element added
		// after it (tproxy.Ordered) finds its entry in the file a
		// restarted HAProxy reads (docs/listeners.md).
		now, left := listenedFirst(want)
		wrote, err = s.write(d.opts.Render.ACLDir, now)
		wrote = append(wrote, s.leave(left)...) // not the pending files (their bytes not made)
	} else {
		wrote, err = s.write(d.opts.Render.ACLDir, want)
	}
	if d.aside != nil {
		d.aside.wrote(wrote) // aside.go
	}
	switch {
	case left && slices.ContainsFunc(want, func(f patternFile) bool { return f.pending }):
		d.due.leave() // built and written after the pass (duefiles.go)
	case whole && !left && err == nil:
		d.due.written() // every file of the latest tables written
	}
	err = errors.Join(dueErr, err)
	res.Write += time.Since(t)
	if sendErr != nil {
		return nil, errors.Join(sendErr, err)
	}
	return edits, err
}

// listenedFirst splits want into the fixed listeners' map files (the TCP
// listener's and the HTTP listener's keys, with or without entries:
// patternFile.keyMap) and the others.
func listenedFirst(want []patternFile) (listened, others []patternFile) {
	for _, f := range want {
		if f.keyMap {
			listened = append(listened, f)
		} else {
			others = append(others, f)
		}
	}
	return listened, others
}

// testHookMapsSent, when set (tests), runs after a batch sent before
// its files were made, before they are made and written: where a
// controller stopped leaves the worker ahead of the files.
var testHookMapsSent func()

// mapEdits are the edits that bring the worker's maps to want (a file
// whose bytes the worker holds needs none; a file no edit changes is
// recorded as held), and false when a pending file cannot go by its
// edit (the worker does not hold what it starts from, or the whole map
// is cheaper): want must be made whole first.
func (d *HAProxy) mapEdits(want []patternFile) ([]mapEdit, bool) {
	var edits []mapEdit
	for _, f := range want {
		if read, _ := d.held.reads(d.pid, f.path); !read {
			continue
		}
		held, known := d.held.of(d.pid, f.path)
		if known && !held.readBack && (f.ver != 0 && held.ver == f.ver || !f.pending && held.body != nil && bytes.Equal(held.body, f.body)) {
			continue
		}
		e, edited := mapEdit{}, false
		if known && !held.readBack && !d.opts.WholeMaps {
			e, edited = knownEdit(f, held) // mapdiff.go
		}
		switch {
		case edited:
		case f.pending:
			return nil, false
		case known && !d.opts.WholeMaps:
			e = diffMap(f.path, held.entries, f.allLines())
		default:
			e = diffMap(f.path, nil, f.allLines())
		}
		if !e.empty() {
			e.what, e.body, e.pending, e.ver, e.keyMap = f.what, f.body, f.pending, f.ver, f.keyMap
			edits = append(edits, e)
		} else {
			d.held.hold(d.pid, f, e.wanted())
		}
	}
	return edits, true
}

// listMaps learns which map files the worker's configuration reads
// (`show map`: a line per map, its file in parentheses).
func (d *HAProxy) listMaps(ctx context.Context) error {
	ans, err := d.rt.ExecChecked(ctx, []string{"show map"})
	if err != nil {
		return err
	}
	read := map[string]bool{}
	for _, l := range strings.Split(ans[0], "\n") {
		if strings.HasPrefix(l, "#") {
			continue
		}
		if _, rest, ok := strings.Cut(l, "("); ok {
			if file, _, ok := strings.Cut(rest, ")"); ok {
				read[file] = true
			}
		}
	}
	if d.held.pid != d.pid {
		d.held.pid, d.held.files = d.pid, nil
	}
	d.held.read = read
	return nil
}

// sendMapEdits sends edits (mapCommands), first the `prepare map` of
// each whole replace, and returns how many commands it sent.
func (d *HAProxy) sendMapEdits(ctx context.Context, edits []mapEdit) (int, error) {
	var prep []string
	var whole []string
	for _, e := range edits {
		if e.whole {
			prep = append(prep, "prepare map "+e.path)
			whole = append(whole, e.path)
		}
	}
	versions := make(map[string]string, len(prep))
	if len(prep) > 0 {
		ans, err := d.rt.ExecChecked(ctx, prep)
		if err != nil {
			return len(prep), err
		}
		for i, a := range ans {
			v, ok := strings.CutPrefix(a, "New version created: ")
			if !ok || v == "" || strings.ContainsAny(v, " \t@") {
				return len(prep), fmt.Errorf("%s: unexpected answer %q: %w", prep[i], a, haproxy.ErrCommand)
			}
			versions[whole[i]] = v
		}
	}
	cmds := mapCommands(edits, versions)
	if _, err := d.rt.ExecChecked(ctx, cmds); err != nil {
		return len(prep) + len(cmds), err
	}
	return len(prep) + len(cmds), nil
}

// logMapEdits says what a pass changed in the maps: the routes (route
// and HTTP maps), the listened addresses and ports (the listener's
// maps), or both, with the number of entries added, changed and deleted
// and of files replaced whole.
func logMapEdits(log *slog.Logger, edits []mapEdit) {
	var routes, listeners bool
	var added, changed, deleted, whole int
	for _, e := range edits {
		if e.keyMap {
			listeners = true
		} else {
			routes = true
		}
		added, changed, deleted = added+len(e.add), changed+len(e.set), deleted+len(e.del)
		if e.whole {
			whole++
		}
	}
	msg := "routes changed without reload"
	switch {
	case listeners && routes:
		msg = "routes and listened addresses or ports changed without reload"
	case listeners:
		msg = "listened addresses or ports changed without reload"
	}
	log.Info(msg, "maps", len(edits), "first", edits[0].what, "added", added, "changed", changed, "deleted", deleted, "replaced_whole", whole)
}
