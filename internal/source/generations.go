package source

import (
	"context"
	"log/slog"
	"sync/atomic"
	"time"

	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/cache"
)

// informerGen is what every generation of a source's informers has: the
// factories that start them and the informers whose events and sync
// count. A source's set of informers embeds it and fills it in build.
type informerGen struct {
	starters  []interface{ Start(stopCh <-chan struct{}) }
	informers []cache.SharedIndexInformer
	cancel    context.CancelFunc
}

func (g *informerGen) register(h handler) error { return registerAll(h, g.informers) }

// start runs the factories' informers until ctx ends or stop is called.
func (g *informerGen) start(ctx context.Context) {
	ctx, g.cancel = context.WithCancel(ctx)
	for _, s := range g.starters {
		s.Start(ctx.Done())
	}
}

func (g *informerGen) stop() { g.cancel() }

func (g *informerGen) synced() bool { return syncedAll(g.informers) }

// generations is a source's informers in use (S, built by build), the
// handlers registered on them, and, with an outage watch, the relister
// that replaces them by a fresh, synced generation after an apiserver
// outage (relist.go). Both sources embed one.
type generations[S any, G interface {
	*S
	generation
}] struct {
	set      atomic.Pointer[S]
	build    func() G
	handlers []handler
	relister *relister
}

// handler is what a source's user registers: change runs on every add,
// delete and update that is Relevant (updates.go); quiet, when not nil,
// on every other update (a status written, say), which needs no pass,
// with the updated object (the cache's).
type handler struct {
	change func()
	quiet  func(obj any)
}

// rebuild makes the generation in use a new one from build (not started).
func (g *generations[S, G]) rebuild(build func() G) {
	g.build = build
	g.set.Store((*S)(build()))
}

func (g *generations[S, G]) current() *S { return g.set.Load() }

// OnChange registers fn to run on every add, delete and update that
// changes what a pass reads (Relevant) (of this generation of the
// informers and of every later one). Call before Start.
func (g *generations[S, G]) OnChange(fn func()) error { return g.OnChangeOr(fn, nil) }

// OnChangeOr is OnChange, and quiet (when not nil) runs on every update
// that changes nothing a pass reads: a status written, by us or another
// controller (the status publisher compares that object again). quiet
// is given the updated object, the one the cache now holds.
func (g *generations[S, G]) OnChangeOr(fn func(), quiet func(obj any)) error {
	h := handler{change: fn, quiet: quiet}
	g.handlers = append(g.handlers, h)
	return G(g.set.Load()).register(h)
}

// Synced reports whether all caches of the generation in use have synced.
func (g *generations[S, G]) Synced() bool { return G(g.set.Load()).synced() }

// startAndWait starts the generation in use (and the relister, if any)
// and reports whether every cache synced within timeout. A relist
// started while it waits (the apiserver unreachable at first, then back)
// counts too.
func (g *generations[S, G]) startAndWait(ctx context.Context, timeout time.Duration) bool {
	G(g.set.Load()).start(ctx)
	if g.relister != nil {
		go g.relister.run(ctx, timeout)
	}
	wctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	return WaitSynced(wctx, g.Synced)
}

// relistAfterOutage sets up the relister: probe is asked /readyz.
func (g *generations[S, G]) relistAfterOutage(o *Outage, log *slog.Logger, probe rest.Interface) {
	g.relister = newRelister(o, log, probe, func(ctx context.Context, timeout time.Duration) error {
		return relistInto(ctx, timeout, &g.set, g.build, g.handlers)
	})
}
