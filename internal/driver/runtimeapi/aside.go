package runtimeapi

import (
	"context"
	"errors"
	"slices"
	"time"

	"github.com/haproxy-k8s-sync/haproxy-k8s-sync/internal/driver"
	"github.com/haproxy-k8s-sync/haproxy-k8s-sync/internal/haproxy"
	"github.com/haproxy-k8s-sync/haproxy-k8s-sync/internal/spares"
)

// The pool's growth reload aside (Options.GrowAside, issue 29;
// docs/backend-pool.md, "The growth reload aside"). A growth reload's
// files are written under d.mu as any reload's; the master's reload (the
// seconds a large config takes to parse) is then waited for by a
// goroutine of its own, and the pass returns, asking the loop to come
// back (driver.Result.Again). The passes that come meanwhile apply what
// needs no reload to the running (old) worker, from the pool it runs;
// one that needs a reload, or finds the reload over, ends it first
// (endAside: the new worker read back, its slots corrected as after any
// reload). What those passes changed in the old worker the new one may
// not hold: its slots are brought to the reload's model at its end and
// planned from there (the next pass's operations are the difference), and
// the maps and ACL files, which it read from disk at some moment in
// between, are sent to it whole once.

// asideReload is a growth reload under way aside.
type asideReload struct {
	p       *writtenReload
	done    chan asideReport // buffered: the goroutine never waits
	report  *asideReport     // received
	started time.Time
	grown   spares.State // the pool the new worker loads
	passes  int          // passes applied to the old worker meanwhile
	freed   []string     // spares given back meanwhile
	// rewrote: the map files passes meanwhile wrote (pushMaps), by path.
	// The new worker read each at some moment of the reload: those it
	// may hold in either version, the others as the reload wrote them.
	rewrote map[string]bool
}

// asideReport is the master's answer to a reload aside.
type asideReport struct {
	rel  haproxy.ReloadResult
	err  error
	took time.Duration
}

// errAside: the reload was told to the master and goes on aside
// (reloadAside); the pass that started it applied.
var errAside = errors.New("reload under way aside")

// errReloadHeld: a pass wanted a reload while one is under way aside; it
// changed nothing and runs again after that reload's end.
var errReloadHeld = errors.New("a reload is under way aside")

// asidePoll is how often the loop comes back for a reload aside's end
// once it is due (the last reload's duration).
const asidePoll = 20 * time.Millisecond

// reloadAside tells the master to reload p's files from a goroutine of
// its own (tellMaster touches no other state of the driver) and returns
// errAside.
func (d *HAProxy) reloadAside(ctx context.Context, p *writtenReload) error {
	a := &asideReload{p: p, done: make(chan asideReport, 1), started: time.Now()}
	d.aside = a
	d.pidEpoch++ // Watch: the worker this reload starts is no restart
	ctx = context.WithoutCancel(ctx)
	go func() {
		rel, err := d.tellMaster(ctx, p)
		a.done <- asideReport{rel: rel, err: err, took: time.Since(a.started)}
	}()
	return errAside
}

// over reports whether the reload aside has ended (the master answered).
func (a *asideReload) over() bool {
	if a.report != nil {
		return true
	}
	select {
	case r := <-a.done:
		a.report = &r
		return true
	default:
		return false
	}
}

// again is when the loop should come back for the reload aside's end:
// once the last reload's duration is past, every asidePoll.
func (d *HAProxy) asideAgain() time.Duration {
	return max(d.lastReload-time.Since(d.aside.started), asidePoll)
}

// mayAside reports whether the growth reload of the pass may go aside:
// asked for, and nothing in flight that only the reload's own pass may
// finish (renewals, the reload mode, a reload the driver owes: owed.go).
func (d *HAProxy) mayAside() bool {
	return d.opts.GrowAside && d.known && d.opts.Mode != ModeReload && len(d.renewals) == 0 &&
		d.owesReload() == ""
}

// endAside waits for the reload aside to end and records it as reload
// does (reloadEnd), into res. On success the pool is the one the passes
// meanwhile left with the grown pool's new spares (grownWith), and
// what those passes sent the old worker is sent to the new one.
func (d *HAProxy) endAside(ctx context.Context, res *driver.Result) error {
	a := d.aside
	if a.report == nil {
		r := <-a.done // bounded: tellMaster's ReloadTimeout
		a.report = &r
	}
	d.aside = nil
	d.pidEpoch++
	r := a.report
	res.Reload += r.took
	d.lastReload = r.took
	err := d.reloadEnd(ctx, a.p, r.rel, r.err, res, nil) // an older pass's reload: no companion told
	if r.err != nil {
		return err // the old workers serve what d.pool says
	}
	if a.passes > 0 {
		// reloadEnd recorded the new worker holding the maps the reload
		// wrote; a file a pass rewrote meanwhile it may hold in either
		// version: read back (mapread.go). The others are known.
		d.held.unknown(d.pid, a.rewrote)
		d.acls.last, d.routeMaps.last = nil, nil
	}
	d.classMemo.SlotsChanged()
	pool := grownWith(d.pool, a.grown)
	d.poolApplied(ctx, pool, nil)
	// A spare given back meanwhile was cleared in the old worker, whose
	// stick tables the new one may have taken over from it (peers).
	var clear []string
	for _, sp := range pool.Spares {
		if sp.Occupant == "" && slices.Contains(a.freed, sp.Name) {
			clear = append(clear, "clear table "+sp.Name)
		}
	}
	if len(clear) > 0 && err == nil {
		if _, cerr := d.rt.ExecChecked(ctx, clear); cerr != nil {
			d.log.Warn("could not clear the stick tables of spares given back", "spares", len(clear), "err", cerr)
		}
	}
	d.log.Info("backend pool grew aside", "spares", len(pool.Spares), "passes_meanwhile", a.passes, "reload", r.took)
	return err
}

// grownWith is cur (the pool the passes during a reload aside left) with
// the spares grown adds to it: grown's classes (growth only adds
// classes), the new spares free unless their occupant took another
// spare meanwhile (the next pass places it), each spare's slots as grown
// sized them.
func grownWith(cur, grown spares.State) spares.State {
	out := spares.State{Classes: slices.Clone(grown.Classes), Spares: slices.Clone(cur.Spares)}
	at := make(map[string]int, len(out.Spares))
	occupied := make(map[string]bool, len(out.Spares))
	for i, sp := range out.Spares {
		at[sp.Name] = i
		if sp.Occupant != "" {
			occupied[sp.Occupant] = true
		}
	}
	for _, sp := range grown.Spares {
		if i, ok := at[sp.Name]; ok {
			out.Spares[i].Slots = sp.Slots
			continue
		}
		if occupied[sp.Occupant] {
			sp.Occupant = ""
		}
		out.Spares = append(out.Spares, sp)
	}
	slices.SortFunc(out.Spares, func(a, b spares.Spare) int {
		i, _ := spares.SpareIndex(a.Name)
		j, _ := spares.SpareIndex(b.Name)
		return i - j
	})
	return out
}

// none reports whether w holds no certificate or CA file: a reload aside
// carries none (the certificates' runtime commits are per worker).
func (w certWant) none() bool {
	idle := 0
	if w.idleListener { // its default line's, which never changes (httpsdefault.go)
		idle = 1
	}
	return len(w.files) == idle && len(w.lists) == idle && len(w.cas) == 0 && len(w.clientCAs) == 0 &&
		len(w.clients.certs) == 0 && len(w.clients.cas) == 0 && len(w.front.certs) == 0 && len(w.front.cas) == 0
}

// wrote records files a pass beside the reload wrote.
func (a *asideReload) wrote(files []patternFile) {
	for _, f := range files {
		if a.rewrote == nil {
			a.rewrote = make(map[string]bool)
		}
		a.rewrote[f.path] = true
	}
}
