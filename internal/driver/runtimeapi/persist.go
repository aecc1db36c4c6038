package runtimeapi

import (
	"context"
	"maps"
	"os"
	"time"

	"github.com/haproxy-k8s-sync/haproxy-k8s-sync/internal/atomicfile"
	"github.com/haproxy-k8s-sync/haproxy-k8s-sync/internal/haproxy"
	"github.com/haproxy-k8s-sync/haproxy-k8s-sync/internal/model"
	"github.com/haproxy-k8s-sync/haproxy-k8s-sync/internal/render"
)

// The config file and the server-state file only matter when HAProxy
// restarts (a reload dumps a fresh state file first), yet each write costs
// HAProxy a dump of every server and the controller a render of the whole
// config. So they are written once changes settle, not while they come.

func (d *HAProxy) schedulePersist() {
	select {
	case d.persist <- struct{}{}:
	default:
	}
}

// Run keeps the config file and the server-state file in step with what
// runs, so that a restart of HAProxy comes back to the same state. After a
// change it writes once changes have been quiet for quiet, and at the
// latest maxDelay after the first change not yet written. When ctx ends it
// writes what is still due (within finalFlushTimeout) and returns: a
// controller that stops leaves files that describe what runs. The caller
// ends ctx once passes have stopped and waits for Run to return.
//
// Beside it, one writer writes the files the passes leave (the maps'
// files, pool.json: duefiles.go), and what is due when ctx ends.
func (d *HAProxy) Run(ctx context.Context, quiet, maxDelay time.Duration) {
	done := make(chan struct{})
	go func() {
		defer close(done)
		d.runDue(ctx) // duefiles.go
	}()
	debounce{quiet: quiet, maxDelay: maxDelay, final: finalFlushTimeout, now: time.Now, after: time.After}.run(ctx, d.persist, d.flush)
	<-done
}

// finalFlushTimeout bounds the write of what is due when Run stops: a
// render and a state dump, well under a second at tens of thousands of
// servers, and short enough for a prompt exit on SIGTERM.
const finalFlushTimeout = 3 * time.Second

// flush renders outside the driver's lock, so that passes are not held up
// at tens of thousands of servers, and writes only if nothing changed
// meanwhile (otherwise a newer flush follows). It reports false in that
// case: nothing was written and it is still due.
func (d *HAProxy) flush(ctx context.Context) bool {
	d.mu.Lock()
	if !d.known || d.aside != nil {
		// Unknown, or a reload aside (aside.go) owns the config file
		// until its end, which schedules the next write.
		d.mu.Unlock()
		return true
	}
	if d.owesReload() != "" {
		// A reload is owed (owed.go: the options changed, the hash in
		// doubt) and will write the file: until then it describes what
		// runs.
		d.mu.Unlock()
		return true
	}
	// Lent, not copied: a server-only pass while it renders copies it
	// before changing it in place (ownLayout). A copy per flush was 2.1
	// MB of issue 29's peak at 10,000 Services: the first flush comes
	// right after the first pass.
	cfg, layout, gen, opts := d.desired, d.lendLayout(), d.gen, d.opts.Render
	d.mu.Unlock()

	t := time.Now()
	// No HashMemo here: one would keep this pass's config and layout alive
	// until the next flush, tens of seconds later; hashing streams.
	tmp, digest, err := d.writeConfig(cfg, layout, opts, render.StructureHash(cfg, layout, opts))
	rendered := time.Since(t)
	if err != nil {
		d.log.Error("could not persist config", "err", err)
		return true
	}
	defer os.Remove(tmp) // no-op once renamed

	d.mu.Lock()
	if d.gen == gen {
		d.layoutLent = false // still d.layout, changed by no pass meanwhile: rendered
	}
	if !d.known || d.gen != gen || d.aside != nil {
		d.mu.Unlock()
		d.schedulePersist()
		return false
	}
	wroteConfig := false
	if digest != d.written {
		// Only server lines differ from the validated config that runs.
		if err := atomicfile.Commit(tmp, d.opts.ConfigPath); err != nil {
			d.mu.Unlock()
			d.log.Error("could not persist config", "err", err)
			return true
		}
		d.written = digest
		d.gen++
		wroteConfig = true
	}
	d.mu.Unlock()
	t = time.Now()
	if err := d.saveState(ctx); err != nil {
		if ctx.Err() != nil {
			// Run is stopping (its context ended during the dump): the
			// state file is still due, written by Run's final flush with
			// a context of its own. Reported written, the config on disk
			// would be newer than the state file beside it, and a HAProxy
			// restarted from both would take the old file's maintenance
			// state for a slot the config has in service.
			return false
		}
		d.log.Warn("could not persist server state", "err", err)
		return true
	}
	d.log.Debug("persisted", "render", rendered, "config", wroteConfig, "state", time.Since(t))
	return true
}

// lendLayout is d.layout for a render outside d.mu: until the render
// ends, a change in place copies it first (ownLayout). Under d.mu.
func (d *HAProxy) lendLayout() model.Layout {
	d.layoutLent = true
	return d.layout
}

// ownLayout makes d.layout the driver's own before a change in place:
// a copy while flush renders it. Under d.mu.
func (d *HAProxy) ownLayout() {
	if d.layoutLent {
		d.layout, d.layoutLent = maps.Clone(d.layout), false
	}
}

// saveState writes the runtime server states to the state file that a
// reload or restart loads.
func (d *HAProxy) saveState(ctx context.Context) error {
	if d.opts.Render.StateFile == "" {
		return nil
	}
	d.stateMu.Lock()
	defer d.stateMu.Unlock()
	return d.saveStateLocked(ctx, nil, nil)
}

// saveStateLocked writes the state file; with next set (before a reload to
// that layout) only the slots that keep their server carry their state,
// and, with checked set too, every other slot in service of a backend
// checked by itself starts down (startDown).
// HAProxy's dump streams straight into the temporary file, filtered line by
// line, so it never sits whole in memory.
func (d *HAProxy) saveStateLocked(ctx context.Context, next model.Layout, checked func(be string) bool) error {
	if d.opts.Render.StateFile == "" {
		return nil
	}
	var filter haproxy.ServersStateFilter
	var down *startDown
	if next != nil {
		if checked != nil {
			down = newStartDown(next, checked)
		}
		filter = func(header string) func([]byte) bool {
			if down == nil {
				return keepUnchanged(header, next)
			}
			keep := keepUnchangedNoting(header, next, down.line)
			if keep == nil {
				down = nil // which lines are kept is unknown: add none
			}
			return keep
		}
	}
	return atomicfile.WriteFunc(d.opts.Render.StateFile, 0o644, func(f *os.File) error {
		if err := haproxy.WriteServersState(ctx, d.opts.Render.StatsSocket, f, filter); err != nil {
			return err
		}
		if down != nil {
			return down.write(f)
		}
		return nil
	})
}

// debounce calls flush after kicks: once kicks have been quiet for quiet,
// and at the latest maxDelay after the first kick not yet flushed. A flush
// that reports false (something changed while it ran) is still due; while
// overdue, attempts come at most one per quiet period, so that a stream of
// changes does not turn into back-to-back renders. When ctx ends, what is
// due is flushed at once, with a context of its own bounded by final. now
// and after are the clock, replaced in tests.
type debounce struct {
	quiet, maxDelay time.Duration
	final           time.Duration
	now             func() time.Time
	after           func(time.Duration) <-chan time.Time
}

func (b debounce) run(ctx context.Context, kicks <-chan struct{}, flush func(context.Context) bool) {
	var p pending
	defer func() { b.stop(ctx, kicks, p, flush) }()
	for {
		if p.first.IsZero() {
			select {
			case <-ctx.Done():
				return
			case <-kicks:
			}
			p.kick(b.now())
		}
		select {
		case <-ctx.Done():
			return
		case <-kicks:
			p.kick(b.now())
			continue
		case <-b.after(p.due(b.quiet, b.maxDelay).Sub(b.now())):
		}
		if flush(ctx) {
			p = pending{}
		} else {
			// The flush saw a change made while it ran: that change starts
			// a quiet period, and while overdue the next attempt waits at
			// least as long.
			now := b.now()
			p.kick(now)
			p.retry = now.Add(b.quiet)
		}
	}
}

// stop flushes what is due when run ends: a pending change, or a kick
// that came with the end of ctx. A flush that reports false (a change came
// while it ran) is tried again, a few times while the final context lasts.
func (b debounce) stop(ctx context.Context, kicks <-chan struct{}, p pending, flush func(context.Context) bool) {
	select {
	case <-kicks:
		p.kick(b.now())
	default:
	}
	if p.first.IsZero() {
		return
	}
	fctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), b.final)
	defer cancel()
	for i := 0; i < 3 && fctx.Err() == nil; i++ {
		if flush(fctx) {
			return
		}
	}
}

// pending describes changes not yet flushed.
type pending struct {
	first time.Time // first kick not flushed; zero when nothing is pending
	last  time.Time // latest kick
	retry time.Time // after a flush that did not complete: no attempt before
}

func (p *pending) kick(now time.Time) {
	if p.first.IsZero() {
		p.first = now
	}
	p.last = now
}

// due is when the next flush happens if no kick comes first: after the
// quiet period, capped by the maximum delay, or once overdue by the retry
// time.
func (p pending) due(quiet, maxDelay time.Duration) time.Time {
	limit := p.first.Add(maxDelay)
	if p.retry.After(limit) {
		limit = p.retry
	}
	if t := p.last.Add(quiet); t.Before(limit) {
		return t
	}
	return limit
}
