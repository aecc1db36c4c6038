package runtimeapi

import (
	"context"
	"errors"
	"fmt"
	"os"
	"slices"
	"strings"
	"time"

	"github.com/haproxy-k8s-sync/haproxy-k8s-sync/internal/atomicfile"
	"github.com/haproxy-k8s-sync/haproxy-k8s-sync/internal/driver"
	"github.com/haproxy-k8s-sync/haproxy-k8s-sync/internal/haproxy"
	"github.com/haproxy-k8s-sync/haproxy-k8s-sync/internal/model"
	"github.com/haproxy-k8s-sync/haproxy-k8s-sync/internal/plan"
)

// A reload: what the structure needs (apply decides), in one parse by
// the master, the previous file put back when it fails.

// reload renders cfg with resized slots, validates and writes it, reloads
// HAProxy and then corrects any slot the state file restored differently.
func (d *HAProxy) reload(ctx context.Context, cfg model.Config, reasons []string, res *driver.Result) error {
	p, err := d.reloadWrite(ctx, cfg, reasons, res)
	if err != nil {
		return err
	}
	if d.asideNext && p.certs.none() {
		return d.reloadAside(ctx, p) // aside.go
	}
	t := time.Now()
	rel, err := d.tellMaster(ctx, p)
	res.Reload = time.Since(t)
	d.lastReload = res.Reload
	var loaded func()
	if carriesWhole(ctx) {
		// The new worker runs the pass's whole model, its map files
		// read: a companion (the kernel's set elements) follows now, not
		// after the slots' corrections and the free spares (issue 29:
		// the elements of a frontend that left the fixed listener for
		// its own bind went 100-200 ms after the reload, its clients
		// refused by the listener meanwhile).
		loaded = func() { driver.Applied(ctx) }
	}
	return d.reloadEnd(ctx, p, rel, err, res, loaded)
}

// wholeKey marks a context whose pass hands apply its whole model (not
// a part fitted to the pool's spares).
type wholeKey struct{}

func withWhole(ctx context.Context) context.Context { return context.WithValue(ctx, wholeKey{}, true) }

func carriesWhole(ctx context.Context) bool { return ctx.Value(wholeKey{}) != nil }

// writtenReload is a reload whose files are written, the config file
// committed, not yet told to the master: the server-state file stays
// locked (stateMu) until the master has reloaded (tellMaster).
type writtenReload struct {
	cfg         model.Config
	reasons     []string
	layout      model.Layout
	hash        string
	maps        []patternFile
	certs       certWant
	restore     func(putBack bool)
	unlockState func()
}

// reloadWrite renders cfg with resized slots and writes every file the
// new worker reads (the server state saved alongside), the config last.
func (d *HAProxy) reloadWrite(ctx context.Context, cfg model.Config, reasons []string, res *driver.Result) (*writtenReload, error) {
	ro := d.opts.Render // a reload writes the current rendering (upgrade.go)
	ro.Legacy = 0
	t := time.Now()
	st := newStages()
	defer st.log(d.log, "reload written")
	layout, _ := plan.Assign(cfg, d.layout, true)
	st.mark("assign")
	hash := d.hashes.StructureHash(cfg, layout, ro)
	res.Render += time.Since(t)
	st.mark("hash")
	// HAProxy refuses a config that needs more open files than it may
	// have, which `haproxy -c` does not check: no reload into a refusal.
	if err := d.checkFDs(ctx, cfg, layout, ro, res); err != nil {
		return nil, fmt.Errorf("reload (%s) not tried: %w", firstReasons(reasons), err)
	}
	res.Reasons = reasons
	st.mark("fds")

	t = time.Now()
	// Hold the state file until the new worker runs: a concurrent flush
	// must not overwrite it with what the old worker reports afterwards.
	d.stateMu.Lock()
	stateLocked := true
	unlockState := func() {
		if stateLocked {
			stateLocked = false
			d.stateMu.Unlock()
		}
	}
	written := false
	defer func() {
		if !written {
			unlockState()
		}
	}()
	// The state dump (megabytes at tens of thousands of servers, HAProxy's
	// work and ours) runs while the new file is rendered and `haproxy -c`
	// checks it, another process: the reload waits for the longer of the
	// two, not their sum.
	saved := make(chan error, 1)
	go func() { saved <- d.saveStateLocked(ctx, layout, checkedBy(cfg)) }()
	waitSaved := func() {
		if saved == nil {
			return
		}
		if err := <-saved; err != nil {
			d.log.Warn("could not save server state before reload", "err", err)
		}
		saved = nil
	}
	defer waitSaved()
	// The new worker reads the source ranges and route maps from their files.
	if _, err := d.acls.write(d.opts.Render.ACLDir, d.aclFiles(cfg)); err != nil {
		return nil, err
	}
	st.mark("acls")
	maps := d.routeMapFiles(cfg)
	for i := range maps {
		// Kept until the reload ends, perhaps after passes beside it
		// (aside.go) that change the listener memo's entries: their own
		// lines now.
		maps[i] = maps[i].own()
	}
	if _, err := d.routeMaps.write(d.opts.Render.ACLDir, maps); err != nil {
		return nil, err
	}
	st.mark("maps")
	if err := writeExtAuth(cfg, d.opts.Render); err != nil { // extauth.go
		return nil, err
	}
	if err := writeIssuerMap(cfg, d.opts.Render); err != nil { // clientauth.go
		return nil, err
	}
	certs := certsOf(d.opts.Render, cfg)
	if err := writeCerts(d.opts.Render.CertDir, certs, d.certs.onDisk()); err != nil {
		return nil, err
	}
	st.mark("certs")
	tmp, digest, err := d.writeConfig(cfg, layout, ro, hash)
	if err != nil {
		return nil, err
	}
	defer os.Remove(tmp) // no-op once renamed
	st.mark("config")
	restore := d.keepPrevious()
	// No `haproxy -c` here: the master parses the new file itself when
	// it reloads and keeps the old workers when that fails (2.6: `show
	// proc` [failed: N]; 2.7+: Success=0), which is then reported below
	// and the previous file put back. Checking first parsed every
	// reload's config twice (issue 29: 5.9 s of 11.5 s at 10,000
	// Services). `render` still checks what it writes.
	waitSaved()
	st.mark("state_wait")
	err = atomicfile.Commit(tmp, d.opts.ConfigPath)
	res.Write = time.Since(t)
	st.mark("commit")
	if err != nil {
		restore(false)
		return nil, err
	}
	d.written = digest
	d.gen++
	written = true
	return &writtenReload{cfg: cfg, reasons: reasons, layout: layout, hash: hash, maps: maps, certs: certs,
		restore: restore, unlockState: unlockState}, nil
}

// tellMaster has the master reload p's files and waits until it has, or
// failed; then the state file is free again. It touches no other state
// of the driver: it may run outside d.mu (aside.go).
func (d *HAProxy) tellMaster(ctx context.Context, p *writtenReload) (haproxy.ReloadResult, error) {
	rctx, cancel := context.WithTimeout(ctx, d.opts.ReloadTimeout)
	defer cancel()
	defer p.unlockState()
	return d.master.ReloadReport(rctx)
}

// reloadEnd records the reload of p that the master reported (rel, err):
// on failure the previous file put back, on success the new worker read
// and its slots corrected; loaded (if not nil) runs once the new worker
// is known to run p's config.
func (d *HAProxy) reloadEnd(ctx context.Context, p *writtenReload, rel haproxy.ReloadResult, err error, res *driver.Result, loaded func()) error {
	cfg, reasons, layout, hash, maps, certs, restore := p.cfg, p.reasons, p.layout, p.hash, p.maps, p.certs, p.restore
	st := newStages()
	defer st.log(d.log, "reload ended")
	d.noteVersion(rel)
	d.gate.reloaded(d.now())
	d.rt.Reset()
	if err != nil {
		// Why, while the file that failed is still on disk (explain.go);
		// then the old workers keep serving the old config: put it back
		// on disk so the file always matches what runs.
		d.explainFailed(ctx, cfg, err)
		restore(true)
		d.known = false
		if errors.Is(err, haproxy.ErrReloadInProgress) {
			return d.reloadBusy(reasons, res, err)
		}
		return fmt.Errorf("reload (%s): %w%s", strings.Join(reasons, "; "), err, fdsNote(res.FDs))
	}
	res.Reloaded = true
	// What the driver owed (owed.go) this reload wrote.
	d.optsReason, d.clientFilesStale = "", false
	d.renewals = nil // the new worker created every server from the files (renew.go)
	d.opts.Render.Legacy = 0
	restore(false)
	if dir := d.opts.Render.ACLDir; dir != "" {
		d.acls.prune(dir, d.aclFiles(cfg))
		keep := maps
		if p, ok := issuerMapFile(d.opts.Render, cfg); ok {
			// The worker's own map (clientauth.go): its rules read it.
			keep = append(slices.Clip(maps), patternFile{path: p})
		}
		d.routeMaps.prune(dir, keep)
	}
	st.mark("prune")
	if err := d.waitHash(ctx, hash, rel.Workers); err != nil {
		d.known = false
		return err
	}
	st.mark("hash_and_slots")
	if loaded != nil {
		loaded()
		st.mark("companion")
	}
	d.held.loaded(d.pid, maps) // the new worker read them from disk (mapsync.go)
	d.hash, d.running, d.layout, d.desired, d.loose = hash, cfg, layout, cfg, nil
	d.unpublished = nil // the new worker loaded only what the file names (dynamic.go)
	d.assigned, d.consistent = true, false
	d.gen++
	d.certs.loaded(certs, d.pid)
	d.commits = certCommits{pid: d.pid} // its files loaded, nothing committed yet (clientcerts.go)
	pruneCerts(d.opts.Render.CertDir, certs, d.certs.onDisk())
	d.padAbsent(cfg, layout) // runtimeslots.go
	st.mark("loaded")
	// The state file may have restored states that no longer hold.
	ops, missing := d.ops(layout, cfg)
	st.mark("plan")
	if len(missing) > 0 {
		d.known = false
		return fmt.Errorf("after reload, runtime lacks %s: %w", missing[0], haproxy.ErrCommand)
	}
	if err := d.execOps(ctx, ops, res); err != nil {
		return err
	}
	st.mark("ops")
	if err := d.createFreeSpares(ctx, cfg, layout, res); err != nil { // runtimeslots.go
		return err
	}
	st.mark("free_spares")
	d.consistent, d.unsent = true, nil
	d.schedulePersist()
	return nil
}
