package runtimeapi

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"math"
	"os"
	"slices"
	"time"

	"github.com/haproxy-k8s-sync/haproxy-k8s-sync/internal/atomicfile"
	"github.com/haproxy-k8s-sync/haproxy-k8s-sync/internal/driver"
	"github.com/haproxy-k8s-sync/haproxy-k8s-sync/internal/model"
	"github.com/haproxy-k8s-sync/haproxy-k8s-sync/internal/spares"
)

// The pool of ready backends (Options.Pool, internal/spares). With a pool,
// every pass applies the model as HAProxy runs it: spares.View, in which
// each Service's backend is the spare it occupies. A new backend whose
// class has a free spare takes it with no reload (its servers through the
// Runtime API; the route maps that name it through theirs), a backend
// that goes gives its spare back (slots to maintenance), and when a class
// runs low the pool grows with one reload: first the pass serves what the
// spares it has can (no reload), then the grown pool goes through the
// reload gate like any structural change (gate.go), so the growth waits
// for a quiet moment and never holds up a backend a free spare serves.
// A backend waiting for the growth is reported (WaitingForSpare) and
// served by the reload that grows the pool.
//
// The pool is kept on disk (PoolFile) after every pass that changed it, so
// that a restarted controller puts every backend back where it was and
// renders the same spares: the structure hash HAProxy runs, no reload.

// PoolFile is where the driver keeps the pool of the config at configPath.
func PoolFile(configPath string) string { return spares.FileBeside(configPath) }

// ReasonWaitingForSpare is the Event reason of a Service whose backend
// waits for the pool to grow.
const ReasonWaitingForSpare = "WaitingForSpare"

// ErrWaitingForSpare: no spare of a backend's class is free yet.
var ErrWaitingForSpare = errors.New("no free spare backend of its class: the pool grows with the next reload")

// ReasonServedByFewerServers is the Warning Event reason of a Service
// served by fewer servers than it has: it outgrew its spare's slots and
// no larger spare is free until the pool grows (fitted). The Service is
// served meanwhile (driver.Refusal.Served); the Warning is not repeated
// once it is whole.
const ReasonServedByFewerServers = "ServedByFewerServers"

// ErrFewerServers: a backend is served by fewer servers than it has.
var ErrFewerServers = errors.New("served by fewer servers than it has until the pool grows with the next reload")

// applyPooled is Apply with a pool, under d.mu. While a growth reload is
// under way aside (aside.go) a pass that needs no reload applies to the
// running worker; any other ends that reload first.
// fronts: which of cfg's frontends changed against the last pass's
// (nil: unknown).
func (d *HAProxy) applyPooled(ctx context.Context, cfg model.Config, fronts *model.FrontendChanges) (driver.Result, error) {
	var ended driver.Result
	if d.aside != nil {
		if d.known && !d.aside.over() {
			if res, err, ok := d.applyPooledPass(ctx, cfg, fronts, true); ok {
				return res, err
			}
		}
		if err := d.endAside(ctx, &ended); err != nil {
			return ended, err
		}
	}
	res, err, _ := d.applyPooledPass(ctx, cfg, fronts, false)
	if ended.Reloaded {
		res.Reloaded, res.Reload = true, res.Reload+ended.Reload
		res.Ops, res.Runtime = res.Ops+ended.Ops, res.Runtime+ended.Runtime
		res.Reasons = append(ended.Reasons, res.Reasons...)
	}
	return res, err
}

// applyPooledPass is a pass of applyPooled. beside: a reload is under
// way aside; the pass applies only what needs none (ok false: it needs
// one, nothing was changed).
func (d *HAProxy) applyPooledPass(ctx context.Context, cfg model.Config, fronts *model.FrontendChanges, beside bool) (driver.Result, error, bool) {
	if !d.known {
		// The version read back decides which backends the pool keeps
		// (dynamic.go).
		if err := d.readBack(ctx); err != nil {
			return driver.Result{}, err, true
		}
		d.classMemo.SlotsChanged() // the slots read back: OccupyFit asks every spare's
	}
	// Behind the fixed listener a restricted Service's spare carries the
	// source rule and files, an unrestricted one's neither
	// (spares/sourced.go).
	start := time.Now()
	cfg, pol := d.sourceMarks.Behind(cfg, fronts, d.opts.Pool, d.opts.Render.ListenedFunc())
	own := d.createdAtRuntime(cfg)
	pooled := spares.Without(cfg, own)
	if !d.poolRead {
		d.pool, d.poolRead = d.readPool(pooled), true
	}
	next, waiting := d.classMemo.OccupyFit(d.pool, pooled, d.spareSlots)
	grown, grow := d.classMemo.Grow(next, pooled, waiting, pol)
	if beside {
		return d.applyBeside(ctx, cfg, fronts, next, waiting, grow, own)
	}
	if !grow {
		// The pool's own work counts as the pass's: its placing and view
		// as render (planning), pool.json as write.
		view, viewFronts := d.poolView.of(next, cfg, fronts, own)
		placed := time.Since(start)
		res, err := d.apply(withWhole(ctx), view, viewFronts) // reload.go
		if err == nil {
			// The model runs, its map files written: a companion (the
			// kernel's set elements) follows now, not after pool.json,
			// which only records where each backend is (issue 29: ~1.4 ms
			// of a new Service's pass at 10,000 Services).
			driver.Applied(ctx)
		}
		t := time.Now()
		d.poolApplied(ctx, next, err)
		res.Render += placed
		res.Write += time.Since(t)
		return res, err, true
	}
	view, viewFronts := d.poolView.of(next, cfg, fronts, own)
	view, cut := d.fitted(view, next)
	var first driver.Result
	served := false
	if d.known && !d.wouldReload(view) {
		// Serve what the spares can now, with no reload; then grow. The
		// growth is still wanted since it was first: this pass does not
		// restart its settle time (gate.go).
		wanted := d.gate.wanted
		res, err := d.apply(ctx, view, viewFronts)
		d.gate.wanted = wanted
		d.poolApplied(ctx, next, err)
		if err != nil {
			return res, err, true
		}
		first, served = res, true
		// What this apply serves is in the running worker and in the files
		// it reads: a companion (the kernel's set elements) may follow it
		// now, not after the growth's reload (issue 29).
		driver.Served(ctx, d.running)
	}
	// Its reload may go aside (aside.go) once the spares it had serve.
	d.asideNext = served && own == nil && d.mayAside()
	// The grown pool viewed through the memo: the next pass finds the
	// very backends this one applied, not a second copy of every spare
	// beside them (issue 29's peak, right after the first pass); the
	// memo's maps are built by the next pass that needs them.
	res, err := d.apply(ctx, d.poolView.ofLater(grown, cfg, own), nil)
	d.asideNext = false
	res.Ops += first.Ops
	res.Runtime += first.Runtime
	res.Refused = append(first.Refused, res.Refused...)
	if err != nil {
		res.Refused = append(res.Refused, cut...) // served by the spare's slots until the growth
	}
	switch {
	case err == nil:
		d.poolApplied(ctx, grown, nil)
		d.log.Info("backend pool grew", "spares", len(grown.Spares), "added", len(grown.Spares)-len(next.Spares), "waited", len(waiting))
	case errors.Is(err, errAside):
		d.aside.grown = grown
		d.poolApplied(ctx, next, nil) // the spares it had serve until the reload's end
		res.Refused = append(res.Refused, waitingFor(cfg, waiting)...)
		err = d.againAside(&res, waiting)
	case errors.Is(err, driver.ErrDeferred):
		d.poolApplied(ctx, next, nil) // the spares it had serve
		res.Refused = append(res.Refused, waitingFor(cfg, waiting)...)
	}
	return res, err, true
}

// applyBeside is a pass while a reload is under way aside: the model
// placed in the spares the running worker has (next), cut to their
// slots (fitted), applied with no reload. ok false: the pass needs a
// reload, and changed nothing.
func (d *HAProxy) applyBeside(ctx context.Context, cfg model.Config, fronts *model.FrontendChanges, next spares.State, waiting []string, grow bool, own func(*model.Backend) bool) (driver.Result, error, bool) {
	if own != nil {
		return driver.Result{}, nil, false // a backend created at runtime: not while the worker changes
	}
	view, viewFronts := d.poolView.of(next, cfg, fronts, own)
	var cut []driver.Refusal
	if grow {
		view, cut = d.fitted(view, next)
	}
	if !certsOf(d.opts.Render, view).none() {
		return driver.Result{}, nil, false // certificates are committed per worker: not while it changes
	}
	res, err := d.apply(ctx, view, viewFronts)
	if errors.Is(err, errReloadHeld) {
		return driver.Result{}, nil, false
	}
	d.aside.passes++
	if err != nil {
		// The worker the driver's connection reaches may be the old one,
		// stopping once the new one took over ("Proxy is disabled"):
		// the reload ends first, then the pass runs as usual (what this
		// one sent is sent again, endAside).
		d.log.Debug("a pass beside the reload aside failed; ending the reload first", "err", err)
		return driver.Result{}, nil, false
	}
	d.poolApplied(ctx, next, nil)
	res.Refused = append(res.Refused, cut...)
	res.Refused = append(res.Refused, waitingFor(cfg, waiting)...)
	return res, d.againAside(&res, waiting), true
}

// againAside has the loop come back for the end of the reload aside: a
// pass that applied all it could (Again), or, when backends wait for the
// spares that reload brings, held back (ErrDeferred, RetryAfter: their
// listener set elements wait too: HAProxy.Apply tells tproxy.Ordered only what is served).
func (d *HAProxy) againAside(res *driver.Result, waiting []string) error {
	if len(waiting) > 0 {
		res.RetryAfter = d.asideAgain()
		return driver.ErrDeferred
	}
	res.Again = d.asideAgain()
	return nil
}

// waitingFor reports the backends of cfg named in waiting as waiting for
// the pool to grow (WaitingForSpare).
func waitingFor(cfg model.Config, waiting []string) []driver.Refusal {
	var out []driver.Refusal
	for _, name := range waiting {
		if i := slices.IndexFunc(cfg.Backends, func(b *model.Backend) bool { return b.Name == name }); i >= 0 {
			out = append(out, driver.Refusal{Service: cfg.Backends[i].Service,
				Reason: ReasonWaitingForSpare, Err: fmt.Errorf("backend %s: %w", name, ErrWaitingForSpare)})
		}
	}
	return out
}

// fitted is view with every spare whose occupant has more servers than
// the spare's running slots cut to those slots. A backend that outgrew
// its spare while no larger one is free (the growth held back by the
// reload gate) is served by the slots it has until the growth's reload
// gives it a larger spare; without the cut it would be a backend out of
// slots (wouldReload), and the serve-first apply of every later pass,
// the new Services' in free spares included, would be skipped until
// then (issue 29).
// Each Service so cut is reported (ReasonServedByFewerServers, served),
// its backend named as the model names it (s, the pool of view).
func (d *HAProxy) fitted(view model.Config, s spares.State) (model.Config, []driver.Refusal) {
	var out []*model.Backend
	var cut []driver.Refusal
	for i, b := range view.Backends {
		if _, ok := spares.SpareIndex(b.Name); !ok {
			continue
		}
		n := d.spareSlots(b.Name)
		if len(b.Servers) <= n {
			continue
		}
		if out == nil {
			out = slices.Clone(view.Backends)
		}
		c := *b
		c.Servers = b.Servers[:n:n]
		out[i] = &c
		cut = append(cut, driver.Refusal{Service: b.Service, Reason: ReasonServedByFewerServers, Served: true,
			Err: fmt.Errorf("backend %s: %d of its %d servers: %w", s.ModelBackend(b.Name), n, len(b.Servers), ErrFewerServers)})
	}
	if out != nil {
		// Changes (a view derived from the last, poolView) names
		// the backends that changed, not the ones cut here.
		view.Backends, view.Changes = out, nil
	}
	return view, cut
}

// spareSlots is how many server slots the running config gives the
// spare named name (spares.OccupyFit): a backend that outgrows them moves
// to a larger free spare with a map change, rather than a reload. Unknown
// (a spare not running yet): as many as needed, a reload sizes it anyway.
func (d *HAProxy) spareSlots(name string) int {
	if l, ok := d.layout[name]; ok && d.known {
		return len(l)
	}
	return math.MaxInt
}

// wouldReload reports whether applying view needs a reload: another
// structure than the one running, or a backend out of slots. Pure: it
// plans as apply does and changes nothing.
func (d *HAProxy) wouldReload(view model.Config) bool {
	layout, exhausted, delta := d.assign(view)
	return len(exhausted) > 0 || d.hashes.StructureHashFrom(view, layout, d.opts.Render, delta) != d.hash
}

// poolApplied records the pool of a pass that applied (err nil, or a
// reload deferred after the runtime changes applied) and writes it. The
// stick tables of spares given back are cleared (spares.Freed).
func (d *HAProxy) poolApplied(ctx context.Context, s spares.State, err error) {
	if err != nil && !errors.Is(err, driver.ErrDeferred) {
		return
	}
	var clear []string
	for _, name := range spares.Freed(d.pool, s) {
		clear = append(clear, "clear table "+name)
		if d.aside != nil {
			d.aside.freed = append(d.aside.freed, name) // cleared again in the new worker (aside.go)
		}
	}
	if len(clear) > 0 {
		if _, err := d.rt.ExecChecked(ctx, clear); err != nil {
			d.log.Warn("could not clear the stick tables of spares given back", "spares", len(clear), "err", err)
		}
	}
	d.pool = s
	body, err := d.poolEncoded.Encode(s) // only the spares that changed encoded again
	if err != nil {
		return
	}
	if bytes.Equal(body, d.poolWritten) {
		d.poolWritten = body // the memo's bytes: the last ones not kept twice
		return
	}
	// Unsynced: the spares it names already run (it is written after the
	// pass applied); a pool.json lost to a machine crash is rebuilt, one
	// reload (readPool). While Run runs, written after the pass
	// (duefiles.go).
	if d.due.later() {
		d.due.add(d.poolFile(), dueFile{body: body, what: "backend pool"})
		d.poolWritten = body
		return
	}
	d.due.writing.Lock()
	err = atomicfile.WriteUnsynced(d.poolFile(), body, 0o644)
	if err == nil {
		d.due.wroteInline(d.poolFile())
	}
	d.due.writing.Unlock()
	if err != nil {
		d.log.Error("could not write the backend pool", "err", err)
		return
	}
	d.poolWritten = body
}

func (d *HAProxy) poolFile() string {
	if d.opts.PoolFile != "" {
		return d.opts.PoolFile
	}
	return PoolFile(d.opts.ConfigPath)
}

// readPool reads the pool a previous run left, for cfg; an empty pool
// when there is none or it cannot be read (said in the log: the pool is
// then rebuilt, one reload).
func (d *HAProxy) readPool(cfg model.Config) spares.State {
	f, err := os.Open(d.poolFile())
	if err != nil {
		if !errors.Is(err, os.ErrNotExist) {
			d.log.Warn("could not read the backend pool; building it anew", "err", err)
		}
		return spares.State{}
	}
	defer f.Close()
	s, err := spares.Decode(f)
	if err != nil {
		d.log.Warn("could not read the backend pool; building it anew", "file", d.poolFile(), "err", err)
		return spares.State{}
	}
	return spares.Restore(s, cfg)
}

// HAProxyBackend is the HAProxy backend that serves the model backend
// name as the driver last applied it (spares.State.HAProxyBackend): the
// spare it occupies, or name without a pool.
func (d *HAProxy) HAProxyBackend(name string) string {
	d.mu.Lock()
	defer d.mu.Unlock()
	return d.pool.HAProxyBackend(name)
}
