package driver

import (
	"context"
	"sync/atomic"
	"time"

	"github.com/haproxy-k8s-sync/haproxy-k8s-sync/internal/model"
)

// What a loop tells a driver about the pass it hands over, besides the
// model: when the first change the pass carries was seen, and whether a
// newer pass is already waiting. Both travel in the context so that the
// one-method Driver stays one method; a driver that has no use for them
// ignores them.

type changedKey struct{}

// WithChanged returns a context telling Apply when the first change that
// the pass carries was seen (a driver that holds reloads back to coalesce
// a burst measures from it). Without it, Apply takes the time it is called.
func WithChanged(ctx context.Context, t time.Time) context.Context {
	return context.WithValue(ctx, changedKey{}, t)
}

// ChangedAt is the time WithChanged put into ctx (zero: none).
func ChangedAt(ctx context.Context) time.Time {
	t, _ := ctx.Value(changedKey{}).(time.Time)
	return t
}

type frontChangesKey struct{}

// WithFrontChanges returns a context telling Apply which frontends of
// the pass's Config changed against the last pass's (the desired delta
// pass's model.FrontendChanges; nil: unknown). A value of the pass, not
// of the Config: a driver that keeps the Config keeps no change list with
// it, and one that ignores it is correct (issue 29).
func WithFrontChanges(ctx context.Context, fc *model.FrontendChanges) context.Context {
	if fc == nil && FrontChangesOf(ctx) == nil {
		return ctx
	}
	return context.WithValue(ctx, frontChangesKey{}, fc)
}

// FrontChangesOf is what WithFrontChanges put into ctx (nil: none).
func FrontChangesOf(ctx context.Context) *model.FrontendChanges {
	fc, _ := ctx.Value(frontChangesKey{}).(*model.FrontendChanges)
	return fc
}

type preemptKey struct{}

// WithPreempt returns a context telling Apply that newer reports whether
// a newer pass is waiting, so that a long batch may stop early and leave
// the rest to that pass. Without it, Apply never stops early.
func WithPreempt(ctx context.Context, newer func() bool) context.Context {
	return context.WithValue(ctx, preemptKey{}, newer)
}

// Preemptible reports whether ctx carries a WithPreempt check.
func Preemptible(ctx context.Context) bool {
	_, ok := ctx.Value(preemptKey{}).(func() bool)
	return ok
}

// Preempted reports whether the WithPreempt check of ctx says a newer
// pass is waiting (false without one).
func Preempted(ctx context.Context) bool {
	newer, _ := ctx.Value(preemptKey{}).(func() bool)
	return newer != nil && newer()
}

// Changes is what a loop knows of the changes its passes have not taken
// yet, told to the driver through WithChanged and WithPreempt. The zero
// value is ready; Note is for any goroutine (informer handlers), Take for
// the passes.
type Changes struct {
	pending atomic.Bool  // a change came since the last pass took its snapshot
	first   atomic.Int64 // when the first change not yet taken was seen (Unix ns)
}

// Note records a change seen now.
func (c *Changes) Note() {
	if c.pending.CompareAndSwap(false, true) {
		c.first.Store(time.Now().UnixNano())
	}
}

// Take is called by a pass before it takes its snapshot: the changes
// noted so far are the pass's. The context it returns tells Apply when the
// first of them was seen (WithChanged, only if there was one) and whether
// another change has come since (WithPreempt), so that a newer pass waits.
func (c *Changes) Take(ctx context.Context) context.Context {
	if c.pending.Swap(false) {
		ctx = WithChanged(ctx, time.Unix(0, c.first.Load()))
	}
	return WithPreempt(ctx, c.pending.Load)
}

type servedKey struct{}

// WithServed returns a context whose Apply tells served the model the
// running HAProxy serves when that is less than the pass: part-way
// through a pass, once part of it is applied and a reload is still to
// come in the same pass (the pool's growth after its serve-first apply),
// and as a pass returns whose reload was held back (ErrDeferred), if the
// driver knows what it serves. That is what a companion driver may now
// follow (tproxy.Ordered adds the set elements of what is served, so that
// a new Service does not wait for that reload); it is the one way a
// driver tells it. Without it, nothing is told.
func WithServed(ctx context.Context, served func(model.Config)) context.Context {
	return context.WithValue(ctx, servedKey{}, served)
}

// Served calls the WithServed callback of ctx, if any, with served.
func Served(ctx context.Context, served model.Config) {
	if f, _ := ctx.Value(servedKey{}).(func(model.Config)); f != nil {
		f(served)
	}
}

type appliedKey struct{}

// WithApplied returns a context whose Apply calls applied once the whole
// model is in the running HAProxy and in the files a restarted one reads,
// before what is left of its pass (the pool's own file, pool.json:
// bookkeeping of what already runs): what a companion driver may now
// follow (tproxy.Ordered adds the new set elements then, so that a new
// Service is not held up by that write, issue 29). Without it, or when
// Apply does not call it, the companion follows after Apply returns.
func WithApplied(ctx context.Context, applied func()) context.Context {
	return context.WithValue(ctx, appliedKey{}, applied)
}

// Applied calls the WithApplied callback of ctx, if any.
func Applied(ctx context.Context) {
	if f, _ := ctx.Value(appliedKey{}).(func()); f != nil {
		f()
	}
}
