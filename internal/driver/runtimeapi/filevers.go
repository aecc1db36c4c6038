package runtimeapi

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/haproxy-k8s-sync/haproxy-k8s-sync/internal/atomicfile"
	"github.com/haproxy-k8s-sync/haproxy-k8s-sync/internal/driver"
	"github.com/haproxy-k8s-sync/haproxy-k8s-sync/internal/haproxy"
	"github.com/haproxy-k8s-sync/haproxy-k8s-sync/internal/render"
)

// Patterns HAProxy reads from files (the ACL files of source ranges,
// acl.go; the map files of Gateway API routes, routemaps.go): the file is
// always written first, so a HAProxy that (re)starts reads what is in
// force, and a running worker is then told through the Runtime API in
// one atomic step per file. A fileSet keeps one kind of them in step.

// patternFile is a file as a model wants it: its content, and the lines
// the Runtime API adds for it.
type patternFile struct {
	path  string
	body  []byte
	lines []string
	// entries: an HTTP map's, whose lines are made from them only when
	// asked (allLines): a pass that sends the memo's edit needs none of
	// them (httpmaps.go).
	entries []render.HTTPMapEntry
	// listened: the listener's map entries (listeners.go), likewise made
	// lines only when asked; read within the pass that made the file.
	listened []render.MapEntry
	// keyMap: a fixed listener's map (mapFile), written in the pass:
	// a TPROXY element added after it finds its key in the file.
	keyMap bool
	what   string // for logs and errors: what the file is of
	edit   *fileEdit
	// pending: an HTTP map whose bytes and entries are made after its
	// edit goes to the worker (httpMapUpdate); size is its entries'
	// count. It only goes by its edit (mapsync.go).
	pending bool
	size    int
	// ver: an HTTP map's version (httpmaps.go: its entries, whether its
	// bytes are made or not); 0: known by its bytes alone.
	ver uint64
}

// allLines are f's lines, made from its entries for an HTTP map.
func (f patternFile) allLines() []string {
	if f.lines != nil || len(f.entries)+len(f.listened) == 0 {
		return f.lines
	}
	out := make([]string, 0, len(f.entries)+len(f.listened))
	for _, e := range f.entries {
		out = append(out, e.Key+" "+e.Value)
	}
	for _, e := range f.listened {
		out = append(out, e.Key+" "+e.Value)
	}
	return out
}

// own is f holding nothing of a memo's: its listener entries made lines.
func (f patternFile) own() patternFile {
	if f.listened != nil {
		f.lines, f.listened = f.allLines(), nil
	}
	return f
}

// count is len(f.allLines()), made or not.
func (f patternFile) count() int {
	if f.pending {
		return f.size
	}
	if f.lines != nil {
		return len(f.lines)
	}
	return len(f.entries) + len(f.listened)
}

// fileSet is the files of one kind (kind "acl" or "map": the Runtime
// API's word and the files' suffix) in the ACL directory, with what was
// last written to each.
type fileSet struct {
	kind string
	last map[string][]byte // path: content last written (the file's own bytes, never changed once made: not copied)
	// unsynced: written without an fsync (atomicfile.WriteUnsynced), for
	// files written after the worker has them (mapsync.go) and rewritten
	// whole by the driver's first pass (last is empty then), so that a
	// change does not wait for the disk. See docs/backend-pool.md, "What
	// the files on disk describe".
	unsynced bool
	// due: the writer after the passes (duefiles.go), for a set whose
	// files a pass may leave to it; nil: always written by the pass.
	due *dueFiles
}

// write writes each file of want whose content is not the one last
// written, and returns those it wrote.
func (s *fileSet) write(dir string, want []patternFile) ([]patternFile, error) {
	if s.due != nil {
		s.due.writing.Lock() // after the writer's write (duefiles.go)
		defer s.due.writing.Unlock()
	}
	var wrote []patternFile
	for _, f := range want {
		if f.pending {
			continue // its bytes not made: written later (duefiles.go)
		}
		if old, ok := s.last[f.path]; ok && bytes.Equal(old, f.body) {
			continue
		}
		if err := os.MkdirAll(dir, 0o755); err != nil {
			return wrote, err
		}
		write := atomicfile.Write
		if s.unsynced {
			write = atomicfile.WriteUnsynced
		}
		if err := write(f.path, f.body, 0o644); err != nil {
			return wrote, fmt.Errorf("%s: %w", f.what, err)
		}
		if s.last == nil {
			s.last = make(map[string][]byte)
		}
		s.last[f.path] = f.body
		if s.due != nil {
			s.due.wroteInline(f.path) // what was due of it is older
		}
		wrote = append(wrote, f)
	}
	return wrote, nil
}

// leave records each file of want whose content is not the one last
// written as written and leaves it to the writer after the passes
// (duefiles.go), and returns those it left. The set has one (s.due).
func (s *fileSet) leave(want []patternFile) []patternFile {
	var left []patternFile
	for _, f := range want {
		if f.pending {
			continue
		}
		if old, ok := s.last[f.path]; ok && bytes.Equal(old, f.body) {
			continue
		}
		if s.last == nil {
			s.last = make(map[string][]byte)
		}
		s.last[f.path] = f.body
		s.due.add(f.path, dueFile{body: f.body, what: f.what, set: s, sync: !s.unsynced})
		left = append(left, f)
	}
	return left
}

// prune removes the files of the kind in dir that want does not name,
// once a reload put the model in force (before, the config on disk may
// still name them).
func (s *fileSet) prune(dir string, want []patternFile) {
	keep := make(map[string]bool, len(want))
	for _, f := range want {
		keep[f.path] = true
	}
	if s.due != nil {
		s.due.writing.Lock() // after the writer's write (duefiles.go)
		defer s.due.writing.Unlock()
		for p, f := range s.due.files {
			if f.set == s && !keep[p] {
				delete(s.due.files, p) // not to come back
			}
		}
	}
	entries, err := os.ReadDir(dir)
	if err != nil {
		return
	}
	for _, e := range entries {
		p := filepath.Join(dir, e.Name())
		if strings.HasSuffix(e.Name(), "."+s.kind) && !keep[p] {
			_ = os.Remove(p)
			delete(s.last, p)
		}
	}
}

// push writes the files of want that changed and gives the running
// worker their new contents. On failure what the worker holds is unknown:
// every file is written and pushed again next time.
func (d *HAProxy) push(ctx context.Context, s *fileSet, want []patternFile, res *driver.Result) ([]patternFile, error) {
	var unknown map[string]bool // the files whose running contents are not known (mapread.go)
	if s.kind == "acl" && !d.opts.WholeMaps {
		for _, f := range want {
			if _, ok := s.last[f.path]; !ok {
				if unknown == nil {
					unknown = map[string]bool{}
				}
				unknown[f.path] = true
			}
		}
	}
	changed, err := s.write(d.opts.Render.ACLDir, want)
	if err != nil || len(changed) == 0 {
		return nil, err
	}
	t := time.Now()
	defer func() { res.Runtime += time.Since(t) }()
	if changed = d.heldACLs(ctx, changed, unknown); len(changed) == 0 { // mapread.go
		return nil, nil
	}
	files := make([]string, len(changed))
	lines := make([][]string, len(changed))
	for i, f := range changed {
		files[i], lines[i] = f.path, f.allLines()
	}
	ops, err := d.replaceFiles(ctx, s.kind, files, lines)
	if err != nil {
		s.last = nil
		d.known = false
		return nil, err
	}
	res.Ops += ops
	return changed, nil
}

// replaceFiles gives each of the running worker's ACL or map files (kind
// "acl" or "map", named as haproxy.cfg names them) the lines given for it,
// one atomic step per file: `prepare` a new version, `add` every line to
// it, `commit` it. Until the commit the old contents are in force whole;
// after it the new ones. It returns how many commands it sent.
func (d *HAProxy) replaceFiles(ctx context.Context, kind string, files []string, lines [][]string) (int, error) {
	prep := make([]string, len(files))
	for i, f := range files {
		prep[i] = "prepare " + kind + " " + f
	}
	ans, err := d.rt.ExecChecked(ctx, prep)
	if err != nil {
		return 0, err
	}
	var cmds []string
	for i, f := range files {
		v, ok := strings.CutPrefix(ans[i], "New version created: ")
		if !ok || v == "" || strings.ContainsAny(v, " \t@") {
			return 0, fmt.Errorf("%s: unexpected answer %q: %w", prep[i], ans[i], haproxy.ErrCommand)
		}
		for _, l := range lines[i] {
			if kind == "map" {
				l = cliMapLine(l) // clivalue.go
			}
			cmds = append(cmds, "add "+kind+" @"+v+" "+f+" "+l)
		}
		cmds = append(cmds, "commit "+kind+" @"+v+" "+f)
	}
	if _, err := d.rt.ExecChecked(ctx, cmds); err != nil {
		return 0, err
	}
	return len(prep) + len(cmds), nil
}
