package runtimeapi

import (
	"context"
	"crypto/sha256"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"sync"
	"time"

	"github.com/haproxy-k8s-sync/haproxy-k8s-sync/internal/driver"
	"github.com/haproxy-k8s-sync/haproxy-k8s-sync/internal/haproxy"
	"github.com/haproxy-k8s-sync/haproxy-k8s-sync/internal/model"
	"github.com/haproxy-k8s-sync/haproxy-k8s-sync/internal/plan"
	"github.com/haproxy-k8s-sync/haproxy-k8s-sync/internal/render"
	"github.com/haproxy-k8s-sync/haproxy-k8s-sync/internal/spares"
)

var (
	_ driver.Driver      = (*HAProxy)(nil)
	_ driver.Verifier    = (*HAProxy)(nil)
	_ driver.Invalidator = (*HAProxy)(nil)
)

// Apply modes.
const (
	// ModeHybrid changes servers through the Runtime API and reloads only
	// for structural changes.
	ModeHybrid = "hybrid"
	// ModeReload renders and reloads for every change, as template-based
	// controllers do. It exists as a baseline for benchmarks.
	ModeReload = "reload"
)

// Options configure the HAProxy driver.
type Options struct {
	ConfigPath        string // haproxy.cfg that HAProxy loads
	Binary            string // haproxy binary, for `haproxy -c`
	MasterSocket      string
	Render            render.Options // StatsSocket and StateFile are used too
	Mode              string
	MinReloadInterval time.Duration // bursts of structural changes coalesce into one reload per interval
	ReloadSettle      time.Duration // a reload waits until its first change is this old, for changes written with it (gate.go)
	ReloadTimeout     time.Duration
	Logger            *slog.Logger

	// onServersOnly, when set (by tests), is told of each pass applied by
	// the servers-only path (applyServers).
	onServersOnly func()
	// opsWindow, when set (by tests), replaces the package's opsWindow,
	// so that a small batch can be preempted.
	opsWindow int

	// staticBackends, when set (by tests of the reload's and the pool's
	// paths), keeps every backend static whatever HAProxy's version: no
	// backend is created at runtime (dynamic.go); a new one is a reload
	// or takes a spare, as on 2.6.
	staticBackends bool

	// WholeMaps replaces every changed map whole, as before maps were
	// changed by difference (mapsync.go): the baseline of benchmarks.
	WholeMaps bool

	// Pool sizes the pool of ready backends (pool.go); zero: none, every
	// backend is rendered under its own name. PoolFile is where the pool
	// is kept ("": PoolFile(ConfigPath)).
	Pool     spares.Policy
	PoolFile string
	// GrowAside: the pool's growth reload goes on aside while later
	// passes apply what needs no reload (aside.go).
	GrowAside bool
}

// HAProxy drives one HAProxy in master-worker mode through its master CLI,
// its worker admin socket and its config file.
type HAProxy struct {
	opts   Options
	rt     *haproxy.Runtime
	master *haproxy.Master
	log    *slog.Logger

	// Whole dumps of the server states ("show servers state", megabytes
	// at tens of thousands of servers) go over a connection of their own,
	// closed afterwards: they do not hold up runtime changes sent through
	// rt, and the buffer that received them is not kept.
	stateMu sync.Mutex // serialises writes of the state file

	mu       sync.Mutex
	known    bool              // the fields below reflect the running HAProxy
	hash     string            // structure hash the running config carries
	pid      string            // worker PID that reported it
	pidEpoch uint64            // counts updates of pid by the driver (see Watch)
	running  model.Config      // last desired model applied (for reload reasons)
	layout   model.Layout      // slot assignment in force
	loose    plan.Loose        // of desired in layout; nil: to be built (applyServers)
	actual   plan.Runtime      // slot states in force
	gate     reloadGate        // when a wanted reload may start
	now      func() time.Time  // the gate's clock (replaced in tests)
	written  [sha256.Size]byte // digest of the bytes last written to ConfigPath (megabytes at scale: not kept)
	desired  model.Config
	// layoutLent: a flush renders layout outside mu (persist.go
	// lendLayout); a change in place copies it first (ownLayout).
	layoutLent bool
	gen        uint64 // counts changes of desired, layout and written
	// assigned: layout is what plan.Assign gave for desired.
	assigned bool
	// consistent: actual holds what layout says for every backend, so a
	// backend whose slots did not change needs no operation.
	consistent bool
	hashes     render.HashMemo // used under mu
	// unsent: backends whose operations a preempted server-only pass did
	// not send, each with when it was first left behind (unsentSeq);
	// actual and layout differ there (see preempt.go).
	unsent    map[string]uint64
	unsentSeq uint64
	// renewals: the backends whose servers are being created again,
	// each where its renewal stands (renew.go).
	renewals  map[string]*renewal
	leftTwins plan.Twins  // twins found by a read back, not yet ended (renewback.go)
	commits   certCommits // what the worker took of the client certificates' files (clientcerts.go)
	// clientFilesStale: a pass found a client certificate's file it may
	// not commit; the next one reloads (clientcerts.go), a reload owed
	// until the general path weighs the files again (owed.go).
	clientFilesStale bool
	persist          chan struct{}
	optsReason       string // why SetStatsPage changed the render options, until a reload applies them (owed.go)
	verify           verifyState
	acls             fileSet      // the source ranges' ACL files (acl.go)
	ranged           rangedMemo   // which backends carry a spare's source rule (aclmemo.go)
	routeMaps        fileSet      // the routes' map files (routemaps.go)
	held             heldMaps     // what the worker holds of them (mapsync.go)
	mapOps           int          // the map commands sent since the driver was made (mapsync.go)
	httpMemos        httpMemos    // the HTTP maps lowered so far (httpmaps.go)
	due              dueFiles     // the files left to write after the passes (duefiles.go)
	noHTTPMemo       bool         // every pass lowers every table whole: the benchmarks' baseline
	noMapEdits       bool         // the memo's edits unused, files diffed whole: the benchmarks' baseline
	listenerMemo     listenerMemo // the listener's map entries kept by frontend (listeners.go)
	certs            certStore    // the TLS certificates the worker holds (certs.go)
	// httpListenerView: the fixed HTTP listener's one table, kept by
	// frontend (routemaps.go).
	httpListenerView render.HTTPListenerMemo
	// refusedLast: what the last pass left out (ports.go), "" for nothing.
	refusedLast string
	version     haproxy.Version // the master's, as the last reload read it (version.go)
	delGuarded  bool            // its `del server` refuses a server a stream names (streamrefs.go)
	// The pool of ready backends (pool.go): as last applied, whether it
	// was read from disk yet, and the bytes last written there.
	pool        spares.State
	poolView    poolView           // the last view (poolview.go)
	sourceMarks spares.SourceMarks // behind the fixed listener: which backends check sources (pool.go)
	classMemo   spares.ClassMemo   // each backend's class, kept by object (pool.go)
	poolEncoded spares.EncodeMemo  // pool.json, its unchanged spares not encoded again (pool.go)
	poolRead    bool
	poolWritten []byte
	// aside: a growth reload under way aside (aside.go); asideNext: the
	// reload of this pass may go aside. lastReload: how long the last
	// reload took the master.
	aside      *asideReload
	asideNext  bool
	lastReload time.Duration
	// unpublished: backends created at runtime that went, unpublished
	// and not deleted yet (dynamic.go).
	unpublished map[string]bool
	pubUnknown  bool // read back: whether each is published is not known

	// slotArgs: the `add server` keywords of the backends whose free
	// slots are created at runtime, by backend (runtimeslots.go).
	slotArgs map[string]string

	// mapsHeldBack, while pushRouteMaps lists the files: the frontends
	// the client certificate map names only after the certificates
	// (clientauth.go).
	mapsHeldBack func(model.Frontend) bool
	// issuersFor: the client certificate map the worker's issuers' map
	// was last pruned against (issuerprune.go).
	issuersFor []byte
}

// NewHAProxy returns a driver; Run must run for on-disk persistence (the
// command line starts it beside the driver, internal/cli compose.go).
func NewHAProxy(opts Options) *HAProxy {
	if opts.Mode == "" {
		opts.Mode = ModeHybrid
	}
	if opts.ReloadTimeout == 0 {
		opts.ReloadTimeout = 30 * time.Second
	}
	if opts.Logger == nil {
		opts.Logger = slog.Default()
	}
	// A spare's free slots are created at runtime when needed, not
	// parsed at every reload (runtimeslots.go); the reload mode runs no
	// such operation.
	opts.Render.RuntimeSlots = opts.Mode != ModeReload
	if opts.Render.ACLDir == "" && opts.ConfigPath != "" {
		// Source ranges live in files beside the config (acl.go), so
		// they change with no reload; a directory whose name HAProxy
		// could misread keeps them inline.
		opts.Render.ACLDir = ACLDir(opts.ConfigPath)
	}
	if opts.Render.CertDir == "" && opts.ConfigPath != "" {
		opts.Render.CertDir = CertDir(opts.ConfigPath) // certs.go
	}
	if !opts.Render.Peer.IsValid() && opts.ConfigPath != "" {
		opts.Render.Peer = localPeer(opts.ConfigPath)
	}
	d := &HAProxy{
		acls:      fileSet{kind: "acl"},
		routeMaps: fileSet{kind: "map", unsynced: true},
		opts:      opts,
		rt:        haproxy.NewRuntime(opts.Render.StatsSocket),
		master:    haproxy.NewMaster(opts.MasterSocket),
		log:       opts.Logger,
		persist:   make(chan struct{}, 1),
		due:       dueFiles{quiet: dueQuiet, maxDelay: dueMaxDelay, kick: make(chan struct{}, 1)},
		gate:      reloadGate{minInterval: opts.MinReloadInterval, settle: opts.ReloadSettle},
		now:       time.Now,
	}
	d.routeMaps.due = &d.due // the listener's, routes' and HTTP maps' files after the pass
	return d
}

// Invalidate forgets what the driver believes HAProxy runs: the next Apply
// reads it back from HAProxy first, holding up that pass for a whole dump.
// Used when HAProxy may have restarted behind the controller's back; the
// periodic resync uses Verify, which reads alongside passes.
func (d *HAProxy) Invalidate() {
	d.mu.Lock()
	d.known = false
	d.mu.Unlock()
}

// Close releases the runtime connection.
func (d *HAProxy) Close() error {
	return d.rt.Close()
}

// Apply implements Driver.
func (d *HAProxy) Apply(ctx context.Context, cfg model.Config) (driver.Result, error) {
	d.mu.Lock()
	defer d.mu.Unlock()
	var res driver.Result
	var err error
	if d.opts.Pool.On() {
		res, err = d.applyPooled(ctx, cfg, driver.FrontChangesOf(ctx))
	} else {
		res, err = d.apply(withWhole(ctx), cfg, driver.FrontChangesOf(ctx)) // reload.go
	}
	if errors.Is(err, driver.ErrDeferred) && d.known {
		// A reload held back: what the running worker serves is the part
		// of the pass applied without it (with a pool, its spares'
		// view), whose listener map entries the worker holds; a companion
		// (tproxy.Ordered) may follow that part now. Unknown after a
		// failure or a reload refused as busy: nothing is told.
		driver.Served(ctx, d.running)
	}
	return res, err
}

// apply is Apply of a model in HAProxy's names, under d.mu. fronts, when
// not nil, says which of cfg's frontends changed against the last
// pass's (model.FrontendChanges: the pass's, or its view's); a value of
// the pass, kept nowhere.
func (d *HAProxy) apply(ctx context.Context, cfg model.Config, fronts *model.FrontendChanges) (driver.Result, error) {
	var res driver.Result
	if !d.known {
		if err := d.readBack(ctx); err != nil {
			return res, err
		}
	}
	// A new frontend on a port another process holds would make HAProxy
	// pause every listener while it fails a reload (ports.go): it is left
	// out, the rest applies. Only once the running frontends are known:
	// all binds would look new otherwise.
	// A server-only change of a model whose frontends all applied last
	// time has no new bind.
	// The frontends the pass or its view says changed (spares.ViewMemo).
	if d.running.Frontends != nil && (cfg.Changes == nil || d.refusedLast != "") {
		cfg, res.Refused = withoutTaken(ctx, d.running, cfg, fronts, d.opts.Render.Listened)
	}
	d.noteRefused(res.Refused)
	if done, err := d.applyServers(ctx, cfg, &res); done {
		d.gate.none()
		return res, err
	}
	// Only applyServers reads Changes; kept in d.desired it would hold the
	// previous Backends array alive.
	cfg.Changes = nil
	if len(d.unsent) > 0 {
		d.consistent = false // plan every backend, the ones left behind too
	}
	t := time.Now()
	layout, exhausted, delta := d.assign(cfg)
	hash := d.adoptRendering(cfg, layout, d.hashes.StructureHashFrom(cfg, layout, d.opts.Render, delta))
	res.Render = time.Since(t)

	var reasons []string
	classChanged := d.classChanged(cfg)                                      // dynamic.go
	staleCAs := d.staleServerCAs(cfg)                                        // cafiles.go
	staleCerts := append(d.staleClientFiles(cfg), d.staleFrontFiles(cfg)...) // clientcerts.go, frontcommits.go
	switch {
	case hash != d.hash:
		reasons = d.structureReasons(cfg)
	case len(staleCAs) > 0:
		reasons = staleCAs
	case len(staleCerts) > 0:
		reasons = staleCerts
	case len(exhausted) > 0:
		reasons = []string{"server slots exhausted in " + strings.Join(exhausted, ", ")}
	case len(classChanged) > 0:
		reasons = classChanged
	case d.opts.Mode == ModeReload && !d.sameServers(layout):
		reasons = []string{"servers changed (apply mode reload)"}
	}
	if len(reasons) > 0 && d.aside != nil {
		return res, errReloadHeld // nothing changed yet: the pass runs again after the reload aside (aside.go)
	}
	if len(reasons) > 0 {
		if wait := d.gate.wait(d.now(), driver.ChangedAt(ctx)); wait > 0 {
			// Coalesce: apply what the runtime can now, reload later.
			// The reload mode (the baseline) changes nothing without a
			// reload.
			var err error
			if d.opts.Mode != ModeReload {
				ops, _ := d.ops(layout, cfg)
				err = d.execOps(ctx, ops, &res)
				d.consistent = false // actual now follows layout, not d.layout
				if err == nil {
					err = d.pushRunningCerts(ctx, cfg, &res) // certs.go
				}
			}
			res.RetryAfter = wait
			if err == nil {
				err = driver.ErrDeferred
			}
			return res, err
		}
		return res, d.reload(ctx, cfg, reasons, &res)
	}
	d.gate.none()
	// No reason from the model: the client files a pass left stale
	// (owed.go) are weighed again by pushCerts.
	d.clientFilesStale = false
	// Backends a class's defaults describe are created before their
	// slots come into service (dynamic.go).
	if err := d.addBackends(ctx, cfg, layout, &res); err != nil {
		return res, err
	}
	ops, missing := d.ops(d.changed(layout, delta), cfg)
	if len(missing) > 0 {
		d.known = false
		return res, fmt.Errorf("runtime state lacks %d slots (first %s): %w", len(missing), missing[0], haproxy.ErrCommand)
	}
	if err := d.pushACLs(ctx, cfg, &res); err != nil {
		return res, err
	}
	// Slots coming into service before a route map names their backend,
	// slots leaving it after (upThenDown): a route moved to another
	// backend finds its servers ready.
	up, down := upThenDown(ops)
	if err := d.execOps(ctx, up, &res); err != nil {
		return res, err
	}
	if err := d.pushRouteMaps(ctx, cfg, fronts, &res); err != nil {
		return res, err
	}
	if err := d.pushCerts(ctx, cfg, &res); err != nil {
		return res, err
	}
	if err := d.pushClientAuth(ctx, cfg, &res); err != nil { // clientauth.go
		return res, err
	}
	if err := d.execOps(ctx, down, &res); err != nil {
		return res, err
	}
	if err := d.dropBackends(ctx, layout, &res); err != nil {
		return res, err
	}
	d.layout, d.running, d.desired, d.loose = layout, cfg, cfg, nil
	d.assigned, d.consistent, d.unsent = true, true, nil
	d.gen++
	d.schedulePersist()
	// Renewals go on after the state is recorded: one ending has the
	// next pass plan every backend (renew.go).
	err := d.renewServers(ctx, cfg, d.certs.takeRenew(), &res)
	d.againForClientFiles(&res) // clientcerts.go
	return res, err
}

func (d *HAProxy) structureReasons(cfg model.Config) []string {
	if d.onlyReadBack() {
		return []string{"running config " + d.hash + " differs from desired"}
	}
	// A Service behind the fixed listener is a map entry, not a frontend
	// (metrics' reload reason: frontend_added would tell of one).
	r := plan.ReasonsOwn(d.running, cfg, d.opts.Render.Listened)
	if owed := d.owesReload(); owed != "" {
		r = append(r, owed)
	}
	if len(r) == 0 {
		r = []string{"server slots resized"}
	}
	return r
}
