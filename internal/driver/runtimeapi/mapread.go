package runtimeapi

import (
	"context"
	"fmt"
	"slices"
	"strings"
)

// Reading the running maps back (issue 29). A worker whose entries the
// driver does not know (a controller that starts beside a running
// HAProxy, a push that failed, a reload aside whose worker read files
// that passes changed meanwhile) used to get each map it reads replaced
// whole: at 10,000 Services the fixed listener's two maps, 10,166
// commands in an unchanged world. The driver now asks the worker what
// it holds (`show map FILE`, every unknown file in one batch) and sends
// only the difference (diffMap). A read that fails or does not look like
// a map's dump (a line that is not "0xREF key [value]", a key twice)
// leaves that file unknown: it is replaced whole, as before. The source
// ranges' ACL files likewise (`show acl FILE`, heldACLs): one the worker
// holds line for line is not pushed again.
//
// HAProxy writes each entry of the current version as "%p key value"
// (the value as given, spaces and all; no value for a bare pattern),
// 2.6 to 3.4 alike (a version prepared and never committed, a
// controller killed in a whole replace, is not shown: tested), and dumps the whole map into one answer, however
// long: its CLI applet yields when its buffer is full and resumes where
// it stopped, and the client reads until the prompt (haproxy.Runtime).

// readMaps learns what the worker holds of each of paths, for the files
// whose entries the driver does not know. It returns how many it read.
// A failure is no error of the pass: those files stay unknown.
func (d *HAProxy) readMaps(ctx context.Context, paths []string) int {
	if len(paths) == 0 {
		return 0
	}
	cmds := make([]string, len(paths))
	for i, p := range paths {
		cmds[i] = "show map " + p
	}
	d.log.Debug("reading running maps back", "maps", len(paths), "files", paths)
	ans, err := d.rt.ExecAnswers(ctx, cmds)
	if err != nil {
		d.log.Debug("running maps not read back; replacing them whole", "maps", len(paths), "err", err)
		return 0
	}
	read := 0
	for i, a := range ans {
		if a.Failed() {
			d.log.Debug("running map not read back; replacing it whole", "map", paths[i], "answer", a.Text)
			continue
		}
		entries, err := parseShowMap(a.Text)
		if err != nil {
			d.log.Warn("running map read back does not look like a map; replacing it whole", "map", paths[i], "err", err)
			continue
		}
		d.held.readBack(d.pid, paths[i], entries)
		read++
	}
	return read
}

// parseShowMap reads the answer of `show map FILE` into entries by key.
func parseShowMap(text string) (map[string]string, error) {
	out := map[string]string{}
	if text == "" {
		return out, nil
	}
	for n, l := range strings.Split(text, "\n") {
		ref, rest, _ := strings.Cut(l, " ")
		if len(ref) < 3 || !strings.HasPrefix(ref, "0x") || rest == "" {
			return nil, fmt.Errorf("line %d: %.80q is not an entry", n+1, l)
		}
		k, v, _ := strings.Cut(rest, " ")
		if k == "" {
			return nil, fmt.Errorf("line %d: %.80q has no key", n+1, l)
		}
		if _, dup := out[k]; dup {
			return nil, fmt.Errorf("line %d: key %.80q held twice", n+1, k)
		}
		out[k] = v
	}
	return out, nil
}

// readBack records that the worker pid holds entries of path, read back
// from it: known, its bytes not (heldMap.readBack).
func (h *heldMaps) readBack(pid, path string, entries map[string]string) {
	if h.pid != pid {
		h.pid, h.read = pid, nil
	}
	if h.files == nil {
		h.files = make(map[string]heldMap)
	}
	h.files[path] = heldMap{entries: entries, readBack: true}
}

// unknownMaps are the files of want the worker pid reads and whose
// entries the driver does not know.
func (h *heldMaps) unknownMaps(pid string, want []patternFile) []string {
	var out []string
	for _, f := range want {
		if read, _ := h.reads(pid, f.path); !read {
			continue
		}
		if _, known := h.of(pid, f.path); !known {
			out = append(out, f.path)
		}
	}
	return out
}

// heldACLs are the ACL files of changed (written this pass) less those
// whose running contents were unknown (not in unknown: their last
// contents were pushed) and that the worker already holds line for line
// (`show acl FILE`, one batch): a controller restarted beside a running
// HAProxy pushes none of the source ranges it left. A file the read does
// not confirm is pushed whole, as before.
func (d *HAProxy) heldACLs(ctx context.Context, changed []patternFile, unknown map[string]bool) []patternFile {
	var ask []patternFile
	for _, f := range changed {
		if unknown[f.path] {
			ask = append(ask, f)
		}
	}
	if len(ask) == 0 {
		return changed
	}
	cmds := make([]string, len(ask))
	for i, f := range ask {
		cmds[i] = "show acl " + f.path
	}
	ans, err := d.rt.ExecAnswers(ctx, cmds)
	if err != nil || len(ans) != len(ask) {
		return changed
	}
	held := map[string]bool{}
	for i, a := range ans {
		if a.Failed() {
			continue
		}
		if got, err := parseShowACL(a.Text); err == nil && slices.Equal(got, sortedLines(ask[i].allLines())) {
			held[ask[i].path] = true
		}
	}
	out := changed[:0:0]
	for _, f := range changed {
		if !held[f.path] {
			out = append(out, f)
		}
	}
	return out
}

// parseShowACL reads the answer of `show acl FILE` ("0xREF pattern" a
// line) into its patterns, sorted.
func parseShowACL(text string) ([]string, error) {
	var out []string
	if text == "" {
		return out, nil
	}
	for n, l := range strings.Split(text, "\n") {
		ref, pat, _ := strings.Cut(l, " ")
		if len(ref) < 3 || !strings.HasPrefix(ref, "0x") || pat == "" || strings.Contains(pat, " ") {
			return nil, fmt.Errorf("line %d: %.80q is not a pattern", n+1, l)
		}
		out = append(out, pat)
	}
	slices.Sort(out)
	return out, nil
}

// sortedLines is a sorted copy of lines.
func sortedLines(lines []string) []string {
	out := slices.Clone(lines)
	slices.Sort(out)
	if out == nil {
		out = []string{}
	}
	return out
}
