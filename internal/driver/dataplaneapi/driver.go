// Package dataplaneapi is the Data Plane API driver: it applies the desired
// model to an HAProxy managed by the HAProxy Data Plane API v3, for
// set-ups that give the controller no admin socket and no config file.
//
// Server churn never reloads: every backend has pre-sized server slots
// (s1, s2, ... as in the HAProxy driver), and a slot changing server or
// going in or out of maintenance is a per-server PUT outside any
// transaction, which the API applies live (address, port, weight and
// maintenance only). Everything else (a section added, changed or
// deleted, a slot added or deleted) goes into one transaction, committed
// once; the driver then polls the reload the commit started. Nothing is
// written when nothing differs, so a resync costs two or three reads.
package dataplaneapi

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"time"

	"github.com/haproxy-k8s-sync/haproxy-k8s-sync/internal/dataplane"
	"github.com/haproxy-k8s-sync/haproxy-k8s-sync/internal/driver"
	"github.com/haproxy-k8s-sync/haproxy-k8s-sync/internal/model"
	"github.com/haproxy-k8s-sync/haproxy-k8s-sync/internal/plan"
)

var (
	_ driver.Driver      = (*Driver)(nil)
	_ driver.Invalidator = (*Driver)(nil)
)

// ErrBackendMissing: in seed mode, the operator's backend does not exist
// and the driver may not create it.
var ErrBackendMissing = errors.New("dataplaneapi: the backend does not exist in HAProxy's configuration")

// Options configure a Driver.
type Options struct {
	Client *dataplane.Client
	// Seed, when set, is the operator's backend (seed mode, the single
	// Service of --service): the driver owns its servers and a few of its
	// settings and touches nothing else. Otherwise the driver owns the
	// frontends and backends named as Owned says.
	Seed string
	// CreateBackend lets seed mode create the backend when it is missing.
	CreateBackend bool
	// OnBackendMissing is called (outside the pass) when seed mode finds
	// the backend missing, once until it is found again.
	OnBackendMissing func(backend string)
	// ReloadPoll is how often a reload's status is read (100ms);
	// ReloadTimeout bounds the wait (2m).
	ReloadPoll, ReloadTimeout time.Duration
	Logger                    *slog.Logger
}

// Pass describes one Apply.
type Pass struct {
	Read, Tx, Commit, Reload, Runtime, Total time.Duration
	Writes                                   int  // requests that wrote
	Reloaded                                 bool // a transaction was committed (the API reloads)
	Err                                      error
}

// Driver implements driver.Driver through the Data Plane API.
type Driver struct {
	c    *dataplane.Client
	opts Options
	log  *slog.Logger

	mu      sync.Mutex
	view    *state          // what the API holds of our objects, at view.version; nil: read it
	drained map[string]bool // backend/slot put in drain at runtime since the last reload
	missing bool
	// What the last pass applied: the selected model, its slots, and the
	// view it left (while d.view is still that view, the sections whose
	// model did not change are known to be as wanted).
	applied   model.Config
	layout    model.Layout
	appliedOn *state
}

// New returns a driver; it makes no request.
func New(opts Options) *Driver {
	if opts.ReloadPoll <= 0 {
		opts.ReloadPoll = 100 * time.Millisecond
	}
	if opts.ReloadTimeout <= 0 {
		opts.ReloadTimeout = 2 * time.Minute
	}
	if opts.Logger == nil {
		opts.Logger = slog.New(slog.DiscardHandler)
	}
	return &Driver{c: opts.Client, opts: opts, log: opts.Logger, drained: map[string]bool{}}
}

// Invalidate forgets what the driver knows of the API's state: the next
// pass reads it all again (and writes only what differs).
func (d *Driver) Invalidate() {
	d.mu.Lock()
	d.view = nil
	d.mu.Unlock()
}

// Ping reports whether the API answers (a read of the version).
func (d *Driver) Ping(ctx context.Context) error {
	_, err := d.c.Version(ctx)
	return err
}

// Apply makes the API's configuration match cfg.
func (d *Driver) Apply(ctx context.Context, cfg model.Config) (driver.Result, error) {
	d.mu.Lock()
	defer d.mu.Unlock()
	start := time.Now()
	var p Pass
	res, reasons, err := d.apply(ctx, cfg, &p)
	p.Total, p.Err = time.Since(start), err
	res.Reloaded, res.Reasons = p.Reloaded, reasons
	res.Write, res.Check, res.Reload, res.Runtime, res.Ops = p.Tx, p.Commit, p.Reload, p.Runtime, p.Writes
	attrs := []any{"read", p.Read, "tx", p.Tx, "commit", p.Commit, "reload", p.Reload, "runtime", p.Runtime,
		"total", p.Total, "writes", p.Writes}
	if len(reasons) > 0 {
		attrs = append(attrs, "reloaded", p.Reloaded, "reasons", reasons)
	}
	if err != nil {
		attrs = append(attrs, "err", err)
	}
	if p.Writes > 0 || err != nil {
		d.log.Info("dataplane pass", attrs...)
	} else {
		d.log.Debug("dataplane pass", attrs...)
	}
	return res, err
}

func (d *Driver) apply(ctx context.Context, cfg model.Config, p *Pass) (driver.Result, []string, error) {
	t := time.Now()
	v, err := d.c.Version(ctx)
	if err != nil {
		d.view = nil
		return driver.Result{}, nil, err
	}
	have := d.view
	if have == nil || have.version != v {
		if have, err = d.read(ctx, v); err != nil {
			d.view = nil
			return driver.Result{}, nil, err
		}
		d.view = have
	}
	p.Read = time.Since(t)
	sel := d.selected(cfg)
	if d.opts.Seed != "" {
		if len(sel.Backends) == 0 {
			// The Service is gone or has no TCP port: keep the servers.
			return driver.Result{}, nil, nil
		}
		if have.backends[d.opts.Seed] == nil && !d.opts.CreateBackend {
			if !d.missing && d.opts.OnBackendMissing != nil {
				d.opts.OnBackendMissing(d.opts.Seed)
			}
			d.missing = true
			return driver.Result{}, nil, fmt.Errorf("%w: backend %q (create it in haproxy.cfg, or allow the controller to create it)", ErrBackendMissing, d.opts.Seed)
		}
		d.missing = false
	}
	var clean map[string]bool
	if d.appliedOn != nil && d.appliedOn == have {
		clean = cleanSections(sel, d.applied)
	}
	d.appliedOn = nil // until this pass succeeds
	prev := layoutFrom(have, sel, d.layout, clean)
	layout, exhausted := plan.Assign(sel, prev, false)
	want, drain := d.target(have, sel, layout, clean)
	changes := diff(have, want)
	if structural(changes) || len(exhausted) > 0 {
		// A reload happens anyway: every backend gets its size anew.
		clean = nil
		layout, _ = plan.Assign(sel, prev, true)
		want, drain = d.target(have, sel, layout, nil)
		changes = diff(have, want)
	}
	var reasons []string
	if structural(changes) {
		for _, c := range changes {
			if !c.live && len(reasons) < 20 {
				reasons = append(reasons, c.what)
			}
		}
		if err := d.transact(ctx, have, changes, p); err != nil {
			d.view = nil
			if errors.Is(err, dataplane.ErrReloadFailed) {
				err = d.repair(ctx, have, err, p)
			}
			return driver.Result{}, reasons, err
		}
		d.view = nil // read again next pass: the commit moved the version
		clear(d.drained)
	} else if len(changes) > 0 {
		t = time.Now()
		err := d.live(ctx, have, changes, p)
		p.Runtime += time.Since(t)
		if err != nil {
			d.view = nil
			return driver.Result{}, nil, err
		}
	}
	t = time.Now()
	err = d.drain(ctx, want, drain, changes, clean, p)
	p.Runtime += time.Since(t)
	if err == nil {
		d.applied, d.layout, d.appliedOn = sel, layout, d.view
	}
	return driver.Result{}, reasons, err
}

// transact makes every change in one transaction and commits it; a
// transaction that is not committed is deleted, whatever happened.
func (d *Driver) transact(ctx context.Context, have *state, changes []change, p *Pass) error {
	t := time.Now()
	tx, err := d.c.OpenTx(ctx, have.version)
	if err != nil {
		return fmt.Errorf("opening a transaction: %w", err)
	}
	p.Writes++
	committed := false
	defer func() {
		if committed {
			return
		}
		cctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 10*time.Second)
		defer cancel()
		if err := d.c.DeleteTx(cctx, tx.ID); err != nil && !errors.Is(err, dataplane.ErrNotFound) {
			d.log.Warn("could not delete a transaction", "transaction", tx.ID, "err", err)
		}
	}()
	w := dataplane.Write{TxID: tx.ID}
	for _, c := range changes {
		if err := d.do(ctx, c, w); err != nil {
			return fmt.Errorf("%s: %w", c.what, err)
		}
		p.Writes++
	}
	p.Tx = time.Since(t)
	t = time.Now()
	_, resp, err := d.c.CommitTx(ctx, tx.ID)
	p.Commit = time.Since(t)
	if err != nil {
		return fmt.Errorf("committing: %w", err)
	}
	committed = true
	p.Writes++
	if resp.ReloadID == "" {
		p.Reloaded = true
		return nil // a forced reload, already done
	}
	t = time.Now()
	rctx, cancel := context.WithTimeout(ctx, d.opts.ReloadTimeout)
	defer cancel()
	err = d.c.WaitReload(rctx, resp.ReloadID, d.opts.ReloadPoll)
	p.Reload = time.Since(t)
	p.Reloaded = err == nil
	return err
}

// repair follows a failed reload. The API still holds the change HAProxy
// refused and would write it again at every commit, so one transaction
// puts back what the driver's objects were before; HAProxy kept serving
// that meanwhile. The pass still fails, and is retried with backoff.
func (d *Driver) repair(ctx context.Context, before *state, cause error, p *Pass) error {
	v, err := d.c.Version(ctx)
	if err != nil {
		return errors.Join(cause, fmt.Errorf("repair after the failed reload: %w", err))
	}
	now, err := d.read(ctx, v)
	if err != nil {
		return errors.Join(cause, fmt.Errorf("repair after the failed reload: %w", err))
	}
	changes := diff(now, before)
	if len(changes) == 0 {
		return cause
	}
	var rp Pass
	if err := d.transact(ctx, now, changes, &rp); err != nil {
		return errors.Join(cause, fmt.Errorf("repair after the failed reload: %w", err))
	}
	p.Writes += rp.Writes
	p.Reload += rp.Reload
	d.log.Warn("reload failed; the API's configuration was put back to the last one that loaded", "err", cause)
	clear(d.drained)
	return cause
}

// live makes server-only changes outside any transaction, each against
// the version the previous one left: no reload.
func (d *Driver) live(ctx context.Context, have *state, changes []change, p *Pass) error {
	for _, c := range changes {
		resp, err := d.c.Replace(ctx, c.path, c.obj, dataplane.Write{Version: have.version})
		if err != nil {
			return fmt.Errorf("%s: %w", c.what, err)
		}
		p.Writes++
		if resp.Version > have.version {
			have.version = resp.Version
		} else {
			have.version++
		}
		have.replaceChild(c.parent, c.obj)
		if resp.Status != 200 {
			// The API reloaded after all (it did not take the change as
			// live): the runtime states it kept are gone.
			p.Reloaded = true
			clear(d.drained)
		}
	}
	return nil
}

// drain puts servers in drain (or back) through the runtime endpoints:
// HAProxy's configuration has no keyword for it.
func (d *Driver) drain(ctx context.Context, want *state, drain map[string]bool, changes []change, clean map[string]bool, p *Pass) error {
	touched := map[string]bool{}
	for _, c := range changes {
		touched[c.path] = true
	}
	for be, sec := range want.backends {
		if clean[be] {
			continue // its servers, so their drain, did not change
		}
		for _, o := range sec.children {
			name, _ := o["name"].(string)
			key := be + "/" + name
			want, had := drain[key], d.drained[key]
			if want == had && !(want && touched[dataplane.ServerPath(be, name)]) {
				continue
			}
			if !want && o["maintenance"] == "enabled" {
				delete(d.drained, key) // maintenance replaced the drain
				continue
			}
			state := "ready"
			if want {
				state = "drain"
			}
			if err := d.c.SetRuntimeState(ctx, be, name, state); err != nil {
				return fmt.Errorf("server %s: setting %s: %w", key, state, err)
			}
			p.Writes++
			if want {
				d.drained[key] = true
			} else {
				delete(d.drained, key)
			}
		}
	}
	return nil
}

func (d *Driver) do(ctx context.Context, c change, w dataplane.Write) error {
	var err error
	switch c.method {
	case "POST":
		_, err = d.c.Create(ctx, c.path, c.obj, w)
	case "PUT":
		_, err = d.c.Replace(ctx, c.path, c.obj, w)
	case "DELETE":
		_, err = d.c.Delete(ctx, c.path, w)
	}
	return err
}

// replaceChild records a server of backend written in the cached state.
func (s *state) replaceChild(backend string, obj Object) {
	if sec := s.backends[backend]; sec != nil {
		name, _ := obj["name"].(string)
		if _, i := sec.child(name); i >= 0 {
			sec.children[i] = obj
		}
	}
}
