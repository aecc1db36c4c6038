// Package controller runs the loop: informer events → one work item →
// desired state from the whole cache → driver. Retries go only through the
// rate-limited workqueue.
package controller

import (
	"context"
	"errors"
	"log/slog"
	"slices"
	"strings"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/client-go/tools/record"

	"github.com/haproxy-k8s-sync/haproxy-k8s-sync/internal/claims"
	"github.com/haproxy-k8s-sync/haproxy-k8s-sync/internal/desired"
	"github.com/haproxy-k8s-sync/haproxy-k8s-sync/internal/driver"
	"github.com/haproxy-k8s-sync/haproxy-k8s-sync/internal/gcstat"
	"github.com/haproxy-k8s-sync/haproxy-k8s-sync/internal/loop"
	"github.com/haproxy-k8s-sync/haproxy-k8s-sync/internal/memlimit"
	"github.com/haproxy-k8s-sync/haproxy-k8s-sync/internal/metrics"
	"github.com/haproxy-k8s-sync/haproxy-k8s-sync/internal/pools"
	"github.com/haproxy-k8s-sync/haproxy-k8s-sync/internal/settings"
	"github.com/haproxy-k8s-sync/haproxy-k8s-sync/internal/source"
)

// syncKey is the single work item: every pass recomputes the whole world.
const syncKey = "sync"

// Options configure the controller.
type Options struct {
	Desired      desired.Options
	ResyncPeriod time.Duration // verify HAProxy's state and re-apply this often
	SyncTimeout  time.Duration // how long to wait for informer caches
	Publisher    *Publisher    // told which Services are served (it writes their status on its own); nil: never
	PoolStatus   *PoolStatus   // told the AddressPools' counts (it writes their status on its own); nil: never
	// Claimer claims each Service's pool addresses before they are
	// bound or published (internal/claims); nil: no claims are made.
	Claimer      *claims.Claimer
	LastGoodPath string // file keeping last valid settings across restarts; "": memory only
	Logger       *slog.Logger
	Metrics      *metrics.Instance // nil: no metrics
	// Leading says whether this replica leads (--leader-elect): only the
	// leader reports problems (Events and their log lines); another
	// replica reports what remains once it leads. nil: it always does.
	Leading func() bool
	// MemoryLimit, when set, sets Go's soft memory limit from the
	// caches' size before each pass (internal/memlimit, issue 29).
	MemoryLimit *memlimit.Tuner
	// OnSynced, when set, is called once the informer caches synced,
	// before the first pass (cli: the executable's pages the lists
	// touched paged out, issue 29). It must not block.
	OnSynced func()
	// OnApplied, when set, is called once, after the first pass the
	// driver applied (cli: the executable's pages the start-up's work
	// touched paged out again, issue 29's peak). It must not block.
	OnApplied func()
	// Passes, when set, is told when each pass starts and ends
	// (loop.Options.Passes).
	Passes loop.PassWatcher
}

// Controller keeps one HAProxy in sync with the cluster.
type Controller struct {
	opts     Options
	src      *source.Source
	drv      driver.Driver
	recorder record.EventRecorder
	loop     *loop.Loop
	log      *slog.Logger

	applied  sync.Once // OnApplied
	lastGood map[string]*settings.Settings
	memo     desired.Memo // per-Service work kept between passes (passes are serial)
	store    lastGoodStore
	good     *goodWriter // writes lastGood off the pass's path (goodwriter.go)
	// goodMu is held while a pass computes, which may edit the last
	// pass's Good in place (desired.Result.GoodEdited); good starts
	// reading a map handed to it only under it, shared, and the passes
	// while it reads have the memo copy instead (desired.Memo.CopyGood).
	goodMu   sync.RWMutex
	reported map[string]string // "ns/name/reason" → message last emitted
	// notReadyKept: the nodes the last pass kept serving though NotReady
	// (fail open, failopen.go).
	notReadyKept []string
	// skipped: the addresses the last pass found no server's
	// (desired.Result.Skipped), logged when they change
	skipped []string
	// skippedNodes: node name → the AddressSkipped Event last emitted
	// on it (skipped.go).
	skippedNodes map[string]string
	// lastPools: each AddressPool's last good spec, used (frozen) while
	// its current one cannot be read.
	lastPools map[string]pools.Pool
	// The last allocation and its inputs: passes with the same objects
	// reuse it.
	allocInputs allocInputs
	lastAlloc   allocation
	// changes: the changes no pass has taken yet; the driver may stop a
	// long batch early for a newer pass, and a reload waits until the
	// first of a pass's changes is --reload-settle old.
	changes driver.Changes
}

// New wires a controller. recorder may be nil (no Events).
func New(src *source.Source, drv driver.Driver, recorder record.EventRecorder, opts Options) *Controller {
	if opts.Logger == nil {
		opts.Logger = slog.Default()
	}
	if opts.SyncTimeout == 0 {
		opts.SyncTimeout = 5 * time.Minute
	}
	log := opts.Logger
	c := &Controller{
		opts:     opts,
		src:      src,
		drv:      drv,
		recorder: recorder,
		loop: loop.New(loop.Options{Name: "haproxy-k8s-sync", BaseDelay: 50 * time.Millisecond, MaxDelay: 10 * time.Second,
			Passes: opts.Passes,
			OnFailure: func(_ string, err error, retries int) {
				log.Error("sync failed; will retry", "err", err, "retries", retries)
			}}),
		log:       log,
		lastGood:  make(map[string]*settings.Settings),
		store:     lastGoodStore{opts.LastGoodPath},
		good:      newGoodWriter(lastGoodStore{opts.LastGoodPath}, log),
		reported:  make(map[string]string),
		lastPools: make(map[string]pools.Pool),
	}
	c.good.guard = c.goodMu.RLocker()
	return c
}

// Trigger asks for a pass.
func (c *Controller) Trigger() {
	c.changes.Note()
	c.loop.Add(syncKey)
}

// Run starts the informers, waits for their caches and processes passes
// until ctx ends.
func (c *Controller) Run(ctx context.Context) error {
	if err := c.src.OnChange(c.Trigger); err != nil {
		return err
	}
	lg, err := c.store.load()
	if err != nil {
		c.log.Warn("ignoring unreadable last good settings", "err", err)
	}
	c.lastGood = lg
	c.good.loaded(lg)
	if err := c.src.Start(ctx, c.opts.SyncTimeout); err != nil {
		return err
	}
	c.log.Info("caches synced")
	if c.opts.OnSynced != nil {
		c.opts.OnSynced()
	}
	c.Trigger()
	go driver.Resync(ctx, c.drv, c.opts.ResyncPeriod, c.log, c.opts.Metrics.Drift, c.Trigger)
	// What the last pass handed the writer is on disk before Run returns.
	wctx, stop := context.WithCancel(ctx)
	written := make(chan struct{})
	go func() { c.good.run(wctx); close(written) }()
	defer func() { stop(); <-written }()
	return c.loop.Run(ctx, func(ctx context.Context, _ string) loop.Outcome {
		return driver.Outcome(c.sync(ctx))
	})
}

// sync is one pass: snapshot → desired → driver.
func (c *Controller) sync(ctx context.Context) (driver.Result, error) {
	if !c.src.Synced() {
		return driver.Result{}, errors.New("informer caches not synced")
	}
	start := time.Now()
	gc0 := gcstat.Read()
	ctx = c.changes.Take(ctx)
	svcs, eps, nodes := c.src.Snapshot()
	if c.opts.MemoryLimit != nil {
		c.opts.MemoryLimit.Follow(memlimit.Size{Services: len(svcs), Endpoints: desired.CountEndpoints(eps)})
	}
	in := desired.Input{Services: svcs, Slices: eps, Nodes: nodes, LastGood: c.lastGood, Memo: &c.memo}
	dopts := c.opts.Desired
	var alloc allocation
	if c.src.Pooled() {
		alloc = c.allocate(svcs)
		in.Addresses, dopts.Pooled = alloc.addrs, true
		if alloc.fresh {
			c.opts.Claimer.Want(alloc.wants, alloc.mine) // before the driver: claims need not wait for HAProxy
		}
	}
	c.goodMu.Lock()
	c.memo.CopyGood(c.good.reading()) // the writer reads the last Good: not edited in place
	d := desired.Compute(in, dopts)
	c.goodMu.Unlock()
	d.Problems = slices.Concat(d.Problems, alloc.problems) // d's may be the memo's
	c.failOpen(d.NotReadyKept, nodes)
	c.logSkipped(d.Skipped)
	c.nodeAddrEvents(d.Skipped, nodes)
	c.lastGood = d.Good
	parse := time.Since(start)

	applyStart := time.Now()
	res, err := c.drv.Apply(driver.WithFrontChanges(ctx, d.FrontChanges), d.Config)
	apply := time.Since(applyStart)
	if err == nil && c.opts.OnApplied != nil {
		c.applied.Do(c.opts.OnApplied)
	}
	// On disk after the driver applied, by the writer's goroutine: the
	// file is for the next start, nothing this pass serves waits for it.
	c.good.want(d.Good, d.GoodEdited)
	refused := c.refusals(res.Refused)
	c.report(slices.Concat(d.Problems, refused))
	if err == nil {
		if alloc.owned != nil {
			c.opts.Publisher.Owned(alloc.owned)
		}
		c.opts.Publisher.Served(served(d.Configured, res.Refused), alloc.addrs)
		c.opts.PoolStatus.Set(alloc.counts, alloc.errs, alloc.ranges)
	}
	c.record(d, res, parse, time.Since(start), err)
	// apply: the driver's whole Apply (its render, write and runtime
	// within); then the collections and allocation in the pass (issue
	// 29: the churn's tail in tproxy mode was taken apart with them).
	attrs := []any{"services", d.Selected, "frontends", len(d.Config.Frontends), "parse", parse, "apply", apply}
	driver.LogPass(c.log, start, res, err, append(attrs, gcstat.Read().Since(gc0).Attrs()...)...)
	return res, err
}

// report emits a Warning Event and a log line for each new or changed
// problem, once; problems that went away are forgotten.
func (c *Controller) report(problems []desired.Problem) {
	if c.opts.Leading != nil && !c.opts.Leading() {
		return // the leader reports; this replica reports what remains once it leads
	}
	seen := make(map[string]bool, len(problems))
	for _, p := range problems {
		k := p.Service.Namespace + "/" + p.Service.Name + "/" + p.Reason
		seen[k] = true
		if c.reported[k] == p.Message {
			continue
		}
		c.reported[k] = p.Message
		c.log.Warn("service problem", "service", p.Service.Namespace+"/"+p.Service.Name, "reason", p.Reason, "message", p.Message)
		if c.recorder != nil {
			c.recorder.Event(p.Service, corev1.EventTypeWarning, p.Reason, p.Message)
		}
	}
	for k := range c.reported {
		if !seen[k] {
			delete(c.reported, k)
		}
	}
}

// refusals are the driver's refusals as problems of their Services (a
// Warning Event each, as for bad input).
func (c *Controller) refusals(rs []driver.Refusal) []desired.Problem {
	var out []desired.Problem
	for _, r := range rs {
		ns, name, _ := strings.Cut(r.Service, "/")
		svc, ok := c.src.Service(ns, name)
		if !ok {
			c.log.Warn("service refused by the driver", "service", r.Service, "reason", r.Reason, "err", r.Err)
			continue
		}
		out = append(out, desired.Problem{Service: svc, Reason: r.Reason, Message: r.Err.Error()})
	}
	return out
}

// served is configured without the Services a driver refused (their
// status waits until they are served); a Service served in part
// (Refusal.Served: some of its servers left out) keeps its status.
func served(configured []*corev1.Service, refused []driver.Refusal) []*corev1.Service {
	if !slices.ContainsFunc(refused, func(r driver.Refusal) bool { return !r.Served }) {
		return configured
	}
	out := make([]*corev1.Service, 0, len(configured))
	for _, svc := range configured {
		if !slices.ContainsFunc(refused, func(r driver.Refusal) bool {
			return !r.Served && r.Service == svc.Namespace+"/"+svc.Name
		}) {
			out = append(out, svc)
		}
	}
	return out
}
