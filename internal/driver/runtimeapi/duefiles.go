package runtimeapi

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/haproxy-k8s-sync/haproxy-k8s-sync/internal/atomicfile"
)

// The files due after a pass (issues 29 and 30): one writer for every
// file a pass leaves that nothing running reads. While Run runs, a pass
// that tells the worker its maps (mapsync.go) leaves their files here,
// and pool.json too (pool.go): the pass returns without waiting for the
// disk. At 10,000 Services a new Service's object pass wrote the
// listener's map file and pool.json itself (1.8-11 ms at 2,000), and the
// Service's EndpointSlice, written right after the object, waited for
// that pass: every other new Service was served a write later. The
// listener's map files are the exception, written by the pass still: a
// TPROXY element is added once the pass applied (tproxy.Ordered), and
// its entry must be in the file a restarted HAProxy reads by then
// (docs/listeners.md, "The order of the two writes").
//
// The files are written once passes have been quiet for dueQuiet, and
// at the latest dueMaxDelay after the first pass that left one (the
// debounce of the config file, shorter bounds), outside the driver's
// lock: several passes in a row cost one write. The HTTP maps' files of
// a pass that sent the memo's edit are not even built by it (~2 ms at
// 5,000 routes, httpMapUpdate): they are built from the memos' latest
// tables, under the lock, just before the write. Written at once after
// each pass instead, the listener's map and pool.json (~2 ms at 10,000)
// ran beside the new Service's EndpointSlice pass that came right after
// the object's on a two-core machine, and slowed it (its p50 5.4 -> 7.7
// ms at 10,000, BENCHMARKS.md).
//
// What reads the files is served first, and nothing is lost:
//
//   - a reload (writeReload) writes every file of its configuration
//     before the master reads them, each at its latest bytes: a file
//     written inline is no longer due, and one the writer is writing is
//     written before it (dueFiles.writing);
//   - a controller stopping writes what is due (Run's end);
//   - a controller killed before the write leaves files older than what
//     runs: the next process reads the worker's maps back and sends the
//     difference from the table it wants, and writes the files
//     (mapread.go, TestHTTPMapsStoppedBeforeWritten); a pool.json older
//     than what runs costs its next start at most one reload (readPool),
//     as it did when it was written at the end of the pass;
//   - a HAProxy started behind the controller's back reads files at most
//     dueMaxDelay old, as its config file at most --persist-max-delay
//     old; its worker is another pid, which the next pass reads back.
//
// A write that fails is logged and leaves its file due, its record
// forgotten (fileSet.last, poolWritten), and the writer failed: passes
// write their files themselves again, what is due first, their errors
// going to the loop's workqueue, which retries.

const (
	dueQuiet    = 100 * time.Millisecond
	dueMaxDelay = time.Second
)

// dueFile is a file a pass made and left to the writer.
type dueFile struct {
	body []byte
	what string
	set  *fileSet // its record (fileSet.last); nil: pool.json (HAProxy.poolWritten)
	sync bool     // written with an fsync
}

// dueFiles is what the passes left to write.
type dueFiles struct {
	quiet, maxDelay time.Duration      // dueQuiet, dueMaxDelay (tests: others)
	on              bool               // Run writes the files after the passes
	http            bool               // a pass left the HTTP maps' files (built when written)
	files           map[string]dueFile // by path: made by a pass, not written yet
	failed          bool               // a write after the passes failed: passes write their files
	kick            chan struct{}
	// writing is held while a file of these is written, by the writer
	// outside the driver's lock, by a pass under it (lock order: mu,
	// then writing): a pass's write comes after the writer's.
	writing sync.Mutex
}

// later reports whether a pass may leave its files to Run.
func (m *dueFiles) later() bool { return m.on && !m.failed }

// leave notes that a pass left the HTTP maps' files, and tells Run.
func (m *dueFiles) leave() {
	m.http = true
	m.tell()
}

// add leaves the file at path to Run.
func (m *dueFiles) add(path string, f dueFile) {
	if m.files == nil {
		m.files = make(map[string]dueFile)
	}
	m.files[path] = f
	m.tell()
}

func (m *dueFiles) tell() {
	select {
	case m.kick <- struct{}{}:
	default:
	}
}

// wroteInline notes that a pass wrote path itself: its due bytes, if
// any, are older. Once nothing is due, the failure is over.
func (m *dueFiles) wroteInline(path string) {
	delete(m.files, path)
	if m.failed && len(m.files) == 0 && !m.http {
		m.failed = false
	}
}

// written notes that a pass wrote every HTTP map's file of the memos'
// latest tables.
func (m *dueFiles) written() {
	m.http = false
	if len(m.files) == 0 {
		m.failed = false
	}
}

// runDue writes what the passes leave until ctx ends, then what is still
// due; passes write their own files again after. Run runs it.
func (d *HAProxy) runDue(ctx context.Context) {
	d.mu.Lock()
	d.due.on = true
	quiet, maxDelay := d.due.quiet, d.due.maxDelay
	d.mu.Unlock()
	debounce{quiet: quiet, maxDelay: maxDelay, final: finalFlushTimeout, now: time.Now, after: time.After}.
		run(ctx, d.due.kick, func(context.Context) bool {
			d.writeDue()
			return true
		})
	d.mu.Lock()
	defer d.mu.Unlock()
	d.due.on = false
	if err := d.writeDueNow(true); err != nil {
		d.log.Error("could not write the files due after the passes", "err", err)
	}
}

// writeDue writes the files due, the HTTP maps' built first, outside
// the driver's lock.
func (d *HAProxy) writeDue() {
	d.mu.Lock()
	files := d.takeDue(true)
	if len(files) == 0 {
		d.mu.Unlock()
		return
	}
	d.due.writing.Lock()
	d.mu.Unlock()
	failed, err := writeDueFiles(files)
	d.due.writing.Unlock()
	if err == nil {
		return
	}
	d.mu.Lock()
	d.dueFailed(failed)
	d.mu.Unlock()
	d.log.Error("could not write files after the passes; the next pass writes them", "err", err)
}

// writeDueNow writes every file due, the HTTP maps' built from the
// memos if http, under the driver's lock (Run's end; a pass after a
// failed write). Under d.mu.
func (d *HAProxy) writeDueNow(http bool) error {
	files := d.takeDue(http)
	if len(files) == 0 {
		return nil
	}
	d.due.writing.Lock()
	failed, err := writeDueFiles(files)
	d.due.writing.Unlock()
	d.dueFailed(failed)
	if err == nil && d.due.failed && len(d.due.files) == 0 && !d.due.http {
		d.due.failed = false
	}
	return err
}

// takeDue takes the files due, first building the HTTP maps' files from
// the memos' latest tables if http and they are due. Under d.mu.
func (d *HAProxy) takeDue(http bool) map[string]dueFile {
	if http && d.due.http {
		t := time.Now()
		dir := d.opts.Render.ACLDir
		var files []patternFile
		for _, name := range slices.Sorted(maps.Keys(d.httpMemos)) {
			files = append(files, d.httpMemos[name].build(dir, name)...) // httpmaps.go
		}
		left := d.routeMaps.leave(files)
		if d.aside != nil {
			d.aside.wrote(left) // a growth reload aside: the new worker may have read either version (aside.go)
		}
		d.due.http = false
		d.log.Debug("HTTP maps' files built after the passes", "files", len(left), "build", time.Since(t))
	}
	files := d.due.files
	d.due.files = nil
	return files
}

// dueFailed puts the files whose write failed back, unless a pass left
// newer bytes meanwhile, and forgets their records, so that the next
// pass, which writes its files itself, writes them again. Under d.mu.
func (d *HAProxy) dueFailed(failed map[string]dueFile) {
	if len(failed) == 0 {
		return
	}
	d.due.failed = true
	for path, f := range failed {
		if _, newer := d.due.files[path]; !newer {
			if d.due.files == nil {
				d.due.files = make(map[string]dueFile)
			}
			d.due.files[path] = f
		}
		if f.set != nil {
			delete(f.set.last, path)
		} else {
			d.poolWritten = nil
		}
	}
}

// writeDueFiles writes files, and returns those it could not write.
func writeDueFiles(files map[string]dueFile) (map[string]dueFile, error) {
	if hook := testHookDueWrite.Load(); hook != nil {
		(*hook)()
	}
	var failed map[string]dueFile
	var errs []error
	for _, path := range slices.Sorted(maps.Keys(files)) {
		f := files[path]
		write := atomicfile.WriteUnsynced
		if f.sync {
			write = atomicfile.Write
		}
		err := os.MkdirAll(filepath.Dir(path), 0o755)
		if err == nil {
			err = write(path, f.body, 0o644)
		}
		if err != nil {
			if failed == nil {
				failed = make(map[string]dueFile)
			}
			failed[path] = f
			errs = append(errs, fmt.Errorf("%s: %w", f.what, err))
		}
	}
	return failed, errors.Join(errs...)
}

// testHookDueWrite, when set (tests), runs before each write of files
// due: a test holds the write there to see who waits for it.
var testHookDueWrite atomic.Pointer[func()]
