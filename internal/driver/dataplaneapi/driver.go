// Package dataplaneapi is the Data Plane API driver: it applies the desired
// model to an HAProxy managed by the HAProxy Data Plane API v3, for
// set-ups that give the controller no admin socket and no config file.
//
// It is shaped by what the API costs (docs/dataplane.md): a runtime request
// takes a millisecond, a versioned write a rewrite of the whole haproxy.cfg
// (0.6 s at 1,000 backends), a commit a reload. So server churn never
// reloads and never waits for haproxy.cfg: every backend has pre-sized
// server slots (s1, s2, ... as in the HAProxy driver), and a slot changing
// server, going in or out of maintenance or draining is changed through the
// runtime endpoints at once; the configuration follows in the background
// once the slot settles (persist.go), one server PUT outside any
// transaction per slot that really changed, which the API applies without
// reload. Everything else (a section added, changed or deleted, a backend
// outgrowing its slots) goes into one transaction, committed once, with
// every server change not yet written; the driver then polls the reload
// the commit started. In every-Service mode servers follow their node
// through the _nodes backend (nodes.go): a node's change is one runtime
// request. Nothing is written when nothing differs, so a resync
// costs two small reads.
package dataplaneapi

import (
	"context"
	"errors"
	"log/slog"
	"sync"
	"time"

	"github.com/haproxy-k8s-sync/haproxy-k8s-sync/internal/dataplane"
	"github.com/haproxy-k8s-sync/haproxy-k8s-sync/internal/driver"
	"github.com/haproxy-k8s-sync/haproxy-k8s-sync/internal/model"
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
	// OnRangesRefused is called (outside the pass) when seed mode finds
	// the Service restricted to source ranges, once until it no longer
	// is: the operator's frontend is not the driver's to restrict, so the
	// Service is refused (every slot out of service) rather than served
	// to every client.
	OnRangesRefused func(service string)
	// ReloadPoll is how often a reload's status is read (100ms);
	// ReloadTimeout bounds the wait (2m).
	ReloadPoll, ReloadTimeout time.Duration
	// A slot changed at runtime is written to the configuration once
	// neither it nor any other slot has changed for PersistQuiet (1s),
	// and at the latest PersistMaxDelay (30s) after its first change:
	// every versioned write costs the API a parse and check of the whole
	// haproxy.cfg, which slows the runtime requests of passes running
	// meanwhile (measured at 1,000 Services: node changes 3-5 times slower
	// during a 0.5-4 s raw write). PersistTimeout bounds each write (30s).
	PersistQuiet, PersistMaxDelay, PersistTimeout time.Duration
	// RawMinWrites: a structural change of at least this many writes
	// (every Service's sections) is made in one write of the raw
	// configuration, not a transaction (default 16; negative: never).
	// RawPersistMin: at least this many slots due are written to the
	// configuration in one raw write that does not reload (default 2;
	// negative: never, one server PUT each). See raw.go.
	RawMinWrites, RawPersistMin int
	Logger                      *slog.Logger
}

// Pass describes one Apply.
type Pass struct {
	Read, Tx, Commit, Reload, Runtime, Total time.Duration
	Waited                                   time.Duration // for a configuration write under way (within Runtime or Tx)
	Writes                                   int           // requests that wrote
	Reloaded                                 bool          // a transaction was committed (the API reloads)
	Err                                      error
}

// Driver implements driver.Driver through the Data Plane API.
type Driver struct {
	c    *dataplane.Client
	opts Options
	log  *slog.Logger
	now  func() time.Time

	mu   sync.Mutex
	view *state // what the API's configuration holds of our objects, at view.version; nil: read it
	// known is the configuration version the driver's own writes left:
	// when the API is at another, someone else wrote (and HAProxy may have
	// reloaded).
	known int64
	// rt is what HAProxy runs, per backend and slot; a backend missing is
	// read through the runtime endpoints when needed. pid is the worker's
	// process id when rt was read or set (0: not known); verify asks the
	// next pass to check it (a resync).
	rt     map[string]map[string]rtSlot
	pid    int64
	verify bool
	// owed: the followers whose own maintenance HAProxy does not have
	// (they inherit their node's), slot → their node's slot (owed.go).
	owed map[string]string
	// wanted is the target of the last pass (the configuration HAProxy
	// should have); dirty the slots whose configuration is not written
	// yet (persist.go).
	wanted       *state
	dirty        map[string]dirty
	lastChange   time.Time // when a pass last changed what HAProxy runs
	timer        *time.Timer
	persisting   bool
	closed       bool
	inflight     string        // the slot the persister is writing
	inflightDone chan struct{} // closed when that write ends
	idle         *sync.Cond    // signalled when persisting ends
	missing      bool
	refusing     bool     // seed mode: the Service has source ranges (OnRangesRefused)
	acl          aclFiles // every-Service mode: the source ranges' files (ranges.go)
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
	if opts.PersistQuiet <= 0 {
		opts.PersistQuiet = time.Second
	}
	if opts.PersistMaxDelay <= 0 {
		opts.PersistMaxDelay = 30 * time.Second
	}
	if opts.PersistTimeout <= 0 {
		opts.PersistTimeout = 30 * time.Second
	}
	if opts.RawMinWrites == 0 {
		opts.RawMinWrites = defaultRawMinWrites
	}
	if opts.RawPersistMin == 0 {
		opts.RawPersistMin = defaultRawPersistMin
	}
	if opts.Logger == nil {
		opts.Logger = slog.New(slog.DiscardHandler)
	}
	d := &Driver{c: opts.Client, opts: opts, log: opts.Logger, now: time.Now,
		rt: map[string]map[string]rtSlot{}, dirty: map[string]dirty{}, owed: map[string]string{}}
	d.idle = sync.NewCond(&d.mu)
	return d
}

// Invalidate asks the next pass to check that nothing changed behind the
// driver's back: the configuration version (someone else wrote: read it
// all again) and HAProxy's worker (it reloaded or restarted: read what it
// runs again). It costs two small reads when nothing did.
func (d *Driver) Invalidate() {
	d.mu.Lock()
	d.verify = true
	d.acl.listed = false // and the source ranges' files (ranges.go)
	d.mu.Unlock()
}

// forget drops everything the driver knows of the API and of HAProxy: the
// next pass reads it all again.
func (d *Driver) forget() {
	d.view, d.wanted, d.appliedOn = nil, nil, nil
	d.resetRuntime()
	d.pid, d.known = 0, 0
	d.acl.listed = false // the files are the driver's alone: what it knows of them stays (ranges.go)
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
	if err := checkable(cfg); err != nil {
		d.log.Error("dataplane pass refused", "err", err)
		return driver.Result{}, err
	}
	res, reasons, err := d.apply(ctx, cfg, &p)
	p.Total, p.Err = time.Since(start), err
	res.Reloaded, res.Reasons = p.Reloaded, reasons
	res.Write, res.Check, res.Reload, res.Runtime, res.Ops = p.Tx, p.Commit, p.Reload, p.Runtime, p.Writes
	attrs := []any{"read", p.Read, "tx", p.Tx, "commit", p.Commit, "reload", p.Reload, "runtime", p.Runtime, "waited", p.Waited,
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
