package claims

import (
	"context"
	"fmt"
	"log/slog"
	"net/netip"
	"sync"
	"time"

	networkingv1 "k8s.io/api/networking/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/util/flowcontrol"
	"k8s.io/client-go/util/workqueue"

	"github.com/haproxy-k8s-sync/haproxy-k8s-sync/internal/loop"
	"github.com/haproxy-k8s-sync/haproxy-k8s-sync/internal/metrics"
)

// Cache is what a Claimer reads of a controller's informers: our claims
// (Selector), whether an object exists, and whether every cache synced;
// and Lookup, whether an object exists by a consistent read of the
// apiserver (a list by name: the roles grant list, not get).
type Cache interface {
	Claims() []*networkingv1.IPAddress
	Exists(Parent) Existence
	Synced() bool
	Lookup(context.Context, Parent) (Existence, error)
}

// Options configure a Claimer.
type Options struct {
	QPS     float32 // writes per second; <= 0: unlimited
	Burst   int
	Workers int // concurrent writes (default 4)
	Logger  *slog.Logger
	Metrics *metrics.Claims // nil: none
}

// Claimer creates and deletes a controller's claims (PlanFor) in
// goroutines of its own, with its own rate limit, as the status
// publishers do: a pass only hands over what its allocation gives (Want).
// Under leader election it runs only while the replica leads, as the
// publishers do: the replicas' passes all read the claims, one writes.
type Claimer struct {
	client  kubernetes.Interface
	cache   Cache
	opts    Options
	limiter flowcontrol.RateLimiter
	log     *slog.Logger
	wake    loop.Wake

	mu      sync.Mutex
	known   bool // Want was called at least once
	want    []Want
	mine    map[types.UID]bool
	actions map[netip.Addr]action // the last plan's, by address
	// seen: the UIDs of claims' objects the caches held (pruned to the
	// claims there are), for PlanFor.
	seen map[types.UID]bool
}

type action struct {
	kind  int // create, remove, verify
	claim Claim
}

const (
	create = iota
	remove
	verify
)

// New returns a Claimer.
func New(client kubernetes.Interface, cache Cache, opts Options) *Claimer {
	if opts.Workers <= 0 {
		opts.Workers = 4
	}
	if opts.Logger == nil {
		opts.Logger = slog.Default()
	}
	c := &Claimer{client: client, cache: cache, opts: opts, log: opts.Logger, wake: loop.NewWake()}
	if opts.QPS > 0 {
		c.limiter = flowcontrol.NewTokenBucketRateLimiter(opts.QPS, max(opts.Burst, 1))
	}
	return c
}

// Want records what the last allocation gives the controller's objects,
// and which objects it answers for (PlanFor; both kept: the caller makes
// new ones every time). It never blocks. Nil Claimer: nothing.
func (c *Claimer) Want(w []Want, mine map[types.UID]bool) {
	if c == nil {
		return
	}
	c.mu.Lock()
	c.known, c.want, c.mine = true, w, mine
	c.mu.Unlock()
	c.wake.Poke()
}

// Run writes claims until ctx ends; it also plans again every
// replanEvery, whatever happened.
func (c *Claimer) Run(ctx context.Context) {
	if c == nil {
		return
	}
	loop.Writers[netip.Addr]{
		Name: "haproxy-k8s-sync-claims", Workers: c.opts.Workers, Wake: c.wake, Every: replanEvery,
		Enqueue: c.enqueue, Write: c.write,
		OnError: func(a netip.Addr, err error, retries int) {
			c.log.Warn("could not write the claim of an address; will retry", "address", a, "err", err, "retries", retries)
		},
	}.Run(ctx)
}

// enqueue plans on the synced caches and queues each address to act on.
func (c *Claimer) enqueue(q workqueue.TypedRateLimitingInterface[netip.Addr]) {
	c.mu.Lock()
	known, want, mine := c.known, c.want, c.mine
	c.mu.Unlock()
	if !known || !c.cache.Synced() {
		return // never on a partial view: a claim it lacks would be taken for free
	}
	have := ReadAll(c.cache.Claims())
	c.opts.Metrics.Held(len(have))
	seen := make(map[types.UID]bool, len(have))
	ex := make(map[Parent]Existence, len(have)) // each claim's object looked up once
	for _, cl := range have {
		ex[cl.Parent] = c.cache.Exists(cl.Parent)
		if c.seen[cl.Parent.UID] || ex[cl.Parent] == Exists {
			seen[cl.Parent.UID] = true
		}
	}
	c.seen = seen // enqueue runs in one goroutine
	p := PlanFor(want, mine, have, func(p Parent) Existence { return ex[p] }, seen)
	acts := make(map[netip.Addr]action, len(p.Create)+len(p.Delete)+len(p.Verify))
	for _, cl := range p.Create {
		acts[cl.Addr] = action{create, cl}
	}
	for _, cl := range p.Delete {
		acts[cl.Addr] = action{remove, cl}
	}
	for _, cl := range p.Verify {
		acts[cl.Addr] = action{verify, cl}
	}
	c.mu.Lock()
	c.actions = acts
	c.mu.Unlock()
	for a := range acts {
		q.Add(a)
	}
}

// write carries out the last plan's action on a, if it still has one.
func (c *Claimer) write(ctx context.Context, a netip.Addr) error {
	c.mu.Lock()
	act, ok := c.actions[a]
	c.mu.Unlock()
	if !ok {
		return nil
	}
	if c.limiter != nil {
		if err := c.limiter.Wait(ctx); err != nil {
			return err
		}
	}
	ips := c.client.NetworkingV1().IPAddresses()
	var err error
	if act.kind == verify {
		var ex Existence
		if ex, err = c.cache.Lookup(ctx, act.claim.Parent); err != nil {
			c.opts.Metrics.Write(metrics.ClaimDelete, metrics.ClaimFailed)
			return fmt.Errorf("claim of %s: looking up %s: %w", a, act.claim.Parent.Key(), err)
		}
		if ex != Gone {
			c.done(a, act) // the cache is behind: it will show the object
			return nil
		}
		act.kind = remove
	}
	if act.kind == create {
		_, err = ips.Create(ctx, act.claim.IPAddress(), metav1.CreateOptions{})
		switch {
		case apierrors.IsAlreadyExists(err):
			// Taken meanwhile (by the other controller, most likely): the
			// next pass sees the claim and gives the object another address.
			c.log.Debug("address claimed by another object first", "address", a, "for", act.claim.Parent.Key())
			c.opts.Metrics.Write(metrics.ClaimCreate, metrics.ClaimTaken)
			err = nil
		case err == nil:
			c.log.Debug("address claimed", "address", a, "for", act.claim.Parent.Key())
			c.opts.Metrics.Write(metrics.ClaimCreate, metrics.ClaimCreated)
		default:
			c.opts.Metrics.Write(metrics.ClaimCreate, metrics.ClaimFailed)
		}
	} else {
		uid := act.claim.UID
		err = ips.Delete(ctx, a.String(), metav1.DeleteOptions{Preconditions: &metav1.Preconditions{UID: &uid}})
		switch {
		case apierrors.IsNotFound(err), apierrors.IsConflict(err):
			c.opts.Metrics.Write(metrics.ClaimDelete, metrics.ClaimGone)
			err = nil // gone, or another claim now: the next plan looks again
		case err == nil:
			c.log.Debug("address claim released", "address", a, "of", act.claim.Parent.Key())
			c.opts.Metrics.Write(metrics.ClaimDelete, metrics.ClaimReleased)
		default:
			c.opts.Metrics.Write(metrics.ClaimDelete, metrics.ClaimFailed)
		}
	}
	if err != nil {
		return fmt.Errorf("claim of %s: %w", a, err)
	}
	c.done(a, act)
	return nil
}

// done forgets a's action, unless a newer plan replaced it.
func (c *Claimer) done(a netip.Addr, act action) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if cur, ok := c.actions[a]; ok && (cur == act || (act.kind == remove && cur.kind == verify && cur.claim == act.claim)) {
		delete(c.actions, a)
	}
}

// replanEvery: a safety net, not a schedule: every change that matters
// (an allocation, a claim, an object) already makes the controller hand
// over its wants, which plans again.
const replanEvery = 30 * time.Second
