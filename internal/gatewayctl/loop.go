// Package gatewayctl runs the Gateway API mode: informer events → one
// work item → gateway.Compute from the whole cache → driver, and, once the
// driver applied a model, the status of the objects it came from
// (Publisher, leader only, rate-limited). Retries go only through the
// work loop (internal/loop).
package gatewayctl

import (
	"context"
	"errors"
	"log/slog"
	"net/netip"
	"sync"
	"time"

	"k8s.io/apimachinery/pkg/types"

	"github.com/haproxy-k8s-sync/haproxy-k8s-sync/internal/claims"
	"github.com/haproxy-k8s-sync/haproxy-k8s-sync/internal/driver"
	"github.com/haproxy-k8s-sync/haproxy-k8s-sync/internal/gateway"
	"github.com/haproxy-k8s-sync/haproxy-k8s-sync/internal/gcstat"
	"github.com/haproxy-k8s-sync/haproxy-k8s-sync/internal/loop"
	"github.com/haproxy-k8s-sync/haproxy-k8s-sync/internal/model"
	"github.com/haproxy-k8s-sync/haproxy-k8s-sync/internal/source"
)

const syncKey = "sync"

// Options configure the loop.
type Options struct {
	Gateway      gateway.Options
	ResyncPeriod time.Duration // verify HAProxy's state and re-apply this often
	SyncTimeout  time.Duration // how long to wait for informer caches
	Publisher    *Publisher    // told what was applied; nil: no status
	// Instances, when set, are the names of the instances the driver
	// hands each model to (driver.Instances): a status is published once
	// each reported it applied the model (InstanceApplied), not when Apply
	// returns.
	Instances []string
	// Claimer, with Gateway.Pooled where the apiserver serves
	// IPAddresses, claims each Gateway's pool addresses before they are
	// served or published (internal/claims); nil: no claims are made.
	Claimer *claims.Claimer
	// Beside, when set, serves more than the Gateways on the same model
	// (the Ingresses, ingressctl): each pass it adds to the model, and
	// it is told when the model runs (with Instances, once every
	// instance runs it: its AppliedLater, if it has one).
	Beside Beside
	Logger *slog.Logger
	// OnSynced, when set, is called once the informer caches synced,
	// before the first pass; OnApplied once, after the first pass the
	// driver applied (the cli pages out there the executable's pages the
	// lists and the start-up's work touched, as in the Services mode:
	// controller.Options).
	OnSynced, OnApplied func()
}

// Beside is a source served beside the Gateways (ingressctl.Server).
type Beside interface {
	// Add adds its frontends and backends to cfg, from the pass's
	// snapshot in and its own objects.
	Add(cfg *model.Config, in gateway.Input)
	// Applied says the model of the last Add runs.
	Applied()
	// Changed is told of an update no pass reads (a status written) and
	// reports whether obj is its own (an Ingress): then the Gateways'
	// publisher is not told.
	Changed(obj any) bool
}

// Loop keeps the drivers in step with the Gateway API objects.
type Loop struct {
	opts    Options
	src     *source.Gateway
	drv     driver.Driver
	loop    *loop.Loop
	log     *slog.Logger
	changes driver.Changes // the changes no pass has taken yet
	pools   *poolBook      // with Gateway.Pooled
	applied *appliedBook   // with Instances
	// assigned: the Gateways' pool addresses of the last pass (the
	// worker's alone).
	assigned map[gateway.Key][]netip.Addr
	// certs: HTTPS listeners' last valid certificates (the worker's alone).
	certs gateway.CertMemo
	// routes: GRPCRoutes' last valid rules (the worker's alone).
	routes gateway.RouteMemo
	// cas: BackendTLSPolicies' last good settings (the worker's alone).
	cas gateway.CAMemo
	// memo: each route's compiled rules across passes (the worker's alone).
	memo        gateway.Memo
	appliedOnce sync.Once // OnApplied
}

// New wires a loop.
func New(src *source.Gateway, drv driver.Driver, opts Options) *Loop {
	if opts.Logger == nil {
		opts.Logger = slog.Default()
	}
	if opts.SyncTimeout == 0 {
		opts.SyncTimeout = 5 * time.Minute
	}
	log := opts.Logger
	var applied *appliedBook
	if len(opts.Instances) > 0 {
		applied = newAppliedBook(opts.Instances, opts.Publisher.Applied)
	}
	return &Loop{opts: opts, src: src, drv: drv, log: log, pools: newPoolBook(log), applied: applied,
		loop: loop.New(loop.Options{Name: "haproxy-k8s-sync-gateway", BaseDelay: 50 * time.Millisecond, MaxDelay: 10 * time.Second,
			OnFailure: func(_ string, err error, retries int) {
				log.Error("sync failed; will retry", "err", err, "retries", retries)
			}})}
}

// Trigger asks for a pass.
func (l *Loop) Trigger() {
	l.changes.Note()
	l.loop.Add(syncKey)
}

// Synced reports whether the caches have synced.
func (l *Loop) Synced() bool { return l.src.Synced() }

// Run starts the informers, waits for their caches and processes passes
// until ctx ends.
func (l *Loop) Run(ctx context.Context) error {
	// An update that changes nothing a pass reads (our own status
	// writes, mostly) costs no pass: the publisher compares that object
	// again.
	if err := l.src.OnChangeOr(l.Trigger, l.quiet); err != nil {
		return err
	}
	if err := l.src.Start(ctx, l.opts.SyncTimeout); err != nil {
		return err
	}
	l.log.Info("caches synced")
	if l.opts.OnSynced != nil {
		l.opts.OnSynced()
	}
	l.Trigger()
	go driver.Resync(ctx, l.drv, l.opts.ResyncPeriod, l.log, func() {}, l.Trigger)
	return l.loop.Run(ctx, func(ctx context.Context, _ string) loop.Outcome {
		return driver.Outcome(l.sync(ctx))
	})
}

// quiet hands an update no pass reads to the source whose object it is:
// an Ingress's to the Ingresses' writers (a Gateway publisher told of an
// object that is not a route looks at every object), any other to the
// publisher.
func (l *Loop) quiet(obj any) {
	if l.opts.Beside != nil && l.opts.Beside.Changed(obj) {
		return
	}
	l.opts.Publisher.Changed(obj)
}

// sync is one pass: snapshot → gateway.Compute → driver → status.
func (l *Loop) sync(ctx context.Context) (driver.Result, error) {
	if !l.src.Synced() {
		return driver.Result{}, errors.New("informer caches not synced")
	}
	start := time.Now()
	gc0 := gcstat.Read()
	ctx = l.changes.Take(ctx)
	in := l.src.SnapshotTold() // the HTTPRoutes changed since the last pass's too (issue 30)
	snapshot := time.Since(start)
	gopts := l.opts.Gateway
	gopts.Certs = &l.certs
	gopts.Routes = &l.routes
	gopts.CAs = &l.cas
	gopts.Memo = &l.memo
	if gopts.Pooled {
		gopts.Pools = l.pools.parse(l.src.Pools())
		gopts.Previous = l.assigned
		if l.opts.Claimer != nil {
			gopts.Claims = claims.ToPools(claims.ReadAll(l.src.Claims()))
		}
		if pb, ok := l.opts.Beside.(PooledBeside); ok {
			gopts.Others = pb.PoolRequests(in, gopts.Claims)
		}
	}
	computeStart := time.Now()
	whole0, kept0, spliced0, tspliced0, told0 := l.memo.TablesWhole, l.memo.TablesIncremental, l.memo.Spliced, l.memo.TablesSpliced, l.memo.Told
	out := gateway.Compute(in, gopts)
	compute := time.Since(computeStart)
	besideStart := time.Now()
	var w []claims.Want
	mine := map[types.UID]bool{}
	if l.opts.Claimer != nil {
		w, mine = wants(in.Gateways, out)
	}
	if pb, ok := l.opts.Beside.(PooledBeside); ok && gopts.Pooled {
		w, mine = besideWants(pb, out.Others, w, mine) // before Add: its addresses
	}
	if l.opts.Beside != nil {
		l.opts.Beside.Add(&out.Config, in)
	}
	beside := time.Since(besideStart)
	l.assigned = out.Assigned
	if l.opts.Claimer != nil {
		l.opts.Claimer.Want(w, mine) // it plans again: claims may have changed
	}
	parse := time.Since(start)
	if l.applied != nil {
		var then func()
		if b, ok := l.opts.Beside.(interface{ AppliedLater() func() }); ok { // ingressctl.Server
			then = b.AppliedLater()
		}
		l.applied.computed(out, then) // before the instances can report it
	}
	applyStart := time.Now()
	res, err := l.drv.Apply(ctx, out.Config)
	apply := time.Since(applyStart)
	if err == nil && l.opts.OnApplied != nil {
		l.appliedOnce.Do(l.opts.OnApplied)
	}
	statusStart := time.Now()
	if err == nil && l.applied == nil {
		// Only what runs is reported: a route is never Accepted, nor a
		// listener Programmed, before the driver applied them.
		l.opts.Publisher.Applied(out)
		if l.opts.Beside != nil {
			l.opts.Beside.Applied()
		}
	}
	// parse: the snapshot and gateway.Compute (and the Ingresses beside),
	// split into snapshot, compute and beside; apply: the driver's whole
	// Apply (its render, write, runtime within); status: handing the
	// result to the publisher; waited: from the first change the pass
	// took to its start; then the collections and allocation in the pass.
	parts := slowParts{"snapshot", snapshot, "compute", compute, "beside", beside, "parse", parse,
		"apply", apply, "status", time.Since(statusStart), "waited", waitedFor(ctx, start),
		"tables_whole", l.memo.TablesWhole - whole0, "tables_kept", l.memo.TablesIncremental - kept0,
		"spliced", l.memo.Spliced - spliced0, "tables_spliced", l.memo.TablesSpliced - tspliced0, // gateway/splice.go
		"routes_told", l.memo.Told - told0} // gateway/routechanges.go: 1 when the pass took the journal's changed HTTPRoutes
	parts = append(parts, gcstat.Read().Since(gc0).Attrs()...)
	if b, ok := l.opts.Beside.(interface{ Parts() []any }); ok { // ingressctl.Server: its own parts

		parts = append(parts, b.Parts()...)
	}
	driver.LogPass(l.log, start, res, err, append([]any{"gateways", len(out.Gateways), "frontends", len(out.Config.Frontends),
		"udp", len(out.Config.UDP)}, parts...)...)
	logSlow(l.log, start, parts)
	return res, err
}

// InstanceApplied is told by each instance (driver.Instance.Observe) that
// it applied cfg; with Options.Instances the status follows once all did.
func (l *Loop) InstanceApplied(instance string, cfg model.Config) {
	if l.applied != nil {
		l.applied.applied(instance, cfg)
	}
}
