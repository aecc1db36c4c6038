package runtimeapi

import (
	"context"
	"maps"
	"slices"
	"time"
)

// The HTTP maps' files written after the passes (issue 30). A new
// route's pass sends the memo's edit to the worker (mapsync.go); the
// whole maps' build and the files' write (~2 ms at 5,000 routes) then
// only keep the next change waiting and, on a small machine, compete
// with HAProxy answering the new route. While Run runs, such a pass
// leaves the HTTP maps' files due instead, and they are built and
// written once, from the memos' latest tables, when passes have been
// quiet for mapFilesQuiet, and at the latest mapFilesMaxDelay after the
// first pass that left them (the debounce of the config file, with
// shorter bounds). What reads the files is served first:
//
//   - a reload (writeReload) builds and writes every map file of its
//     configuration before the master reads them: the files it writes
//     are the latest ones;
//   - a controller stopping writes what is due (Run's end);
//   - a controller killed before the write leaves files older than the
//     worker's maps: the next process reads the worker's maps back and
//     sends the difference from the table it wants, and writes the
//     files (mapread.go, TestHTTPMapsStoppedBeforeWritten);
//   - a HAProxy started behind the controller's back reads files at
//     most mapFilesMaxDelay old, as its config file at most
//     --persist-max-delay old; its worker is another pid, which the next
//     pass reads back.
//
// Everything here runs under the driver's mu, as the passes do: a write
// builds the tables the memos hold then, so a pass cannot be lost
// between the two. A write that fails is logged and leaves the files due
// and the next pass writes them itself (its error going to the loop's
// workqueue, which retries).

const (
	mapFilesQuiet    = 100 * time.Millisecond
	mapFilesMaxDelay = time.Second
)

// mapFiles is what the passes left of the HTTP maps' files.
type mapFiles struct {
	quiet, maxDelay time.Duration // mapFilesQuiet, mapFilesMaxDelay (tests: others)
	on              bool          // Run writes the files after the passes
	due             bool          // a pass left files to write
	failed          bool          // the last write after the passes failed: passes write their files
	kick            chan struct{}
}

// later reports whether a pass may leave the HTTP maps' files to Run.
func (m *mapFiles) later() bool { return m.on && !m.failed }

// leave notes that a pass left files to write, and tells Run.
func (m *mapFiles) leave() {
	m.due = true
	select {
	case m.kick <- struct{}{}:
	default:
	}
}

// written notes that a pass wrote every HTTP map's file of the memos'
// latest tables: nothing is due, and a write that failed before is over.
func (m *mapFiles) written() { m.due, m.failed = false, false }

// runMapFiles writes the HTTP maps' files the passes leave until ctx
// ends, then what is still due; passes write their own files again
// after. Run runs it.
func (d *HAProxy) runMapFiles(ctx context.Context) {
	d.mu.Lock()
	d.mapFiles.on = true
	d.mu.Unlock()
	debounce{quiet: d.mapFiles.quiet, maxDelay: d.mapFiles.maxDelay, final: finalFlushTimeout, now: time.Now, after: time.After}.
		run(ctx, d.mapFiles.kick, func(context.Context) bool {
			d.mu.Lock()
			defer d.mu.Unlock()
			if err := d.writeMapFiles(); err != nil {
				d.log.Error("could not write the HTTP maps' files; the next pass writes them", "err", err)
			}
			return true
		})
	d.mu.Lock()
	defer d.mu.Unlock()
	d.mapFiles.on = false
	if err := d.writeMapFiles(); err != nil {
		d.log.Error("could not write the HTTP maps' files", "err", err)
	}
}

// writeMapFiles builds and writes the HTTP maps' files that are due,
// from the memos' latest tables. Under d.mu.
func (d *HAProxy) writeMapFiles() error {
	if !d.mapFiles.due {
		return nil
	}
	t := time.Now()
	dir := d.opts.Render.ACLDir
	var files []patternFile
	for _, name := range slices.Sorted(maps.Keys(d.httpMemos)) {
		files = append(files, d.httpMemos[name].build(dir, name)...) // httpmaps.go
	}
	built := time.Since(t)
	wrote, err := d.routeMaps.write(dir, files)
	if d.aside != nil {
		d.aside.wrote(wrote) // a growth reload aside: the new worker may have read either version (aside.go)
	}
	d.mapFiles.due, d.mapFiles.failed = err != nil, err != nil
	d.log.Debug("HTTP maps' files written after the passes", "files", len(wrote), "build", built, "total", time.Since(t))
	return err
}
