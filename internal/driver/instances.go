package driver

import (
	"context"
	"errors"
	"log/slog"
	"sync"
	"time"

	"github.com/haproxy-k8s-sync/haproxy-k8s-sync/internal/loop"
	"github.com/haproxy-k8s-sync/haproxy-k8s-sync/internal/model"
)

var (
	_ Driver   = (*Instances)(nil)
	_ Verifier = (*Instances)(nil)
)

// Instance is one HAProxy (or any Driver) among several the controller
// keeps in sync, with the name its log lines carry.
type Instance struct {
	Name   string
	Driver Driver
	// Observe, when set, is told of every attempt of this instance: the
	// model, the driver's result and error, and how long Apply took (the
	// instance's own metrics).
	Observe func(cfg model.Config, res Result, err error, took time.Duration)
	// Drift, when set, is called when a resync finds this instance's
	// state differing from what was applied.
	Drift func()
}

// Instances keeps several HAProxy instances in sync, each on its own: Apply
// only hands the model over and returns; every instance has its own worker,
// its own workqueue with its own retry backoff, and takes the newest model
// when it is free. A dead or slow instance never delays the others, and
// catches up with the newest model when it comes back.
type Instances struct {
	insts []*instance
	log   *slog.Logger
}

type instance struct {
	Instance
	loop *loop.Loop
	log  *slog.Logger

	mu   sync.Mutex
	next *model.Config // newest model not yet taken by the worker
	// nextFronts: the frontends next changed against the model before it
	// (WithFrontChanges), when the instance took that one; a value of
	// the pass, never kept with last.
	nextFronts *model.FrontendChanges
	last       *model.Config // model of the last attempt (retried on failure)
}

// NewInstances returns the fan-out over insts. Run must be running for
// anything to be applied.
func NewInstances(insts []Instance, log *slog.Logger) *Instances {
	if log == nil {
		log = slog.Default()
	}
	m := &Instances{log: log}
	for _, in := range insts {
		ilog := log.With("instance", in.Name)
		m.insts = append(m.insts, &instance{
			Instance: in,
			loop: loop.New(loop.Options{Name: "instance-" + in.Name, BaseDelay: 50 * time.Millisecond, MaxDelay: 10 * time.Second,
				OnFailure: func(_ string, err error, retries int) {
					ilog.Error("instance update failed; will retry", "err", err, "retries", retries)
				}}),
			log: ilog,
		})
	}
	return m
}

// Apply hands cfg to every instance. It never blocks on an instance and
// never fails: each instance reports and retries its own errors.
func (m *Instances) Apply(ctx context.Context, cfg model.Config) (Result, error) {
	fronts := FrontChangesOf(ctx)
	for _, in := range m.insts {
		in.mu.Lock()
		c := cfg
		in.nextFronts = fronts
		if in.next != nil {
			// The instance skipped a model: Changes describes the step
			// from that one, not from what the instance runs.
			c.Changes, in.nextFronts = nil, nil
		}
		in.next = &c
		in.mu.Unlock()
		in.loop.Add("apply")
	}
	return Result{}, nil
}

// Run runs every instance's worker until ctx ends.
func (m *Instances) Run(ctx context.Context) {
	var wg sync.WaitGroup
	for _, in := range m.insts {
		wg.Go(func() { _ = in.loop.Run(ctx, in.turn) })
	}
	wg.Wait()
}

// turn applies the newest model (or retries the last one that failed).
func (in *instance) turn(ctx context.Context, _ string) loop.Outcome {
	in.mu.Lock()
	cfg, failed, fronts := in.next, in.last, in.nextFronts
	in.next, in.nextFronts = nil, nil
	if cfg == nil {
		cfg = failed // a retry
	}
	if cfg != nil && failed != nil {
		// After a failure Changes no longer describes the step from what
		// the instance runs: apply the model whole.
		c := *cfg
		c.Changes, fronts = nil, nil
		cfg = &c
	}
	in.last = cfg
	in.mu.Unlock()
	if cfg == nil {
		return loop.Outcome{}
	}
	start := time.Now()
	res, err := in.Driver.Apply(WithFrontChanges(ctx, fronts), *cfg)
	if in.Observe != nil && ctx.Err() == nil {
		in.Observe(*cfg, res, err, time.Since(start))
	}
	if err == nil {
		in.mu.Lock()
		in.last = nil
		if res.Again > 0 {
			// Work under way (a renewal): the turn that comes back
			// applies this model again, whole, unless a newer came.
			c := *cfg
			c.Changes = nil
			in.last = &c
		}
		in.mu.Unlock()
		if res.Reloaded || res.Ops > 0 {
			in.log.Info("instance update", "ops", res.Ops, "reloaded", res.Reloaded, "total", time.Since(start))
		}
	}
	return Outcome(res, err)
}

// Verify verifies every instance that can, side by side (drift if any
// found some); instances that cannot are told to forget what they cache.
func (m *Instances) Verify(ctx context.Context) (bool, error) {
	drift := make([]bool, len(m.insts))
	errs := make([]error, len(m.insts))
	var wg sync.WaitGroup
	for i, in := range m.insts {
		wg.Go(func() {
			drift[i], errs[i] = Check(ctx, in.Driver)
			if drift[i] && in.Drift != nil {
				in.Drift()
			}
			if errs[i] != nil {
				errs[i] = errors.Join(errors.New("instance "+in.Name), errs[i])
			}
		})
	}
	wg.Wait()
	for _, d := range drift {
		if d {
			return true, errors.Join(errs...)
		}
	}
	return false, errors.Join(errs...)
}
