package controller

import (
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"maps"
	"net/netip"
	"slices"
	"sync"

	"github.com/haproxy-k8s-sync/haproxy-k8s-sync/internal/loop"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/util/flowcontrol"
	"k8s.io/client-go/util/workqueue"
)

// ServiceLister reads Services from the informer cache.
type ServiceLister interface {
	Service(namespace, name string) (*corev1.Service, bool)
	Services() []*corev1.Service
}

// PublisherOptions configure a Publisher.
type PublisherOptions struct {
	Addresses []netip.Addr
	// Pooled: each Service gets its own addresses from the AddressPools
	// (Served's addrs) instead of Addresses.
	Pooled  bool
	QPS     float32 // status writes per second; <= 0: unlimited
	Burst   int
	Workers int // concurrent writes (default 4)
	Logger  *slog.Logger
}

// Publisher writes the load balancer's addresses into
// .status.loadBalancer.ingress of the LoadBalancer Services this controller
// serves (ipMode Proxy: kube-proxy must send in-cluster traffic for the
// address through HAProxy, not straight to the pods), and clears them when
// a Service stops being served. It works in its own goroutines with its own
// rate limit, never inside a pass: a pass only hands over the list of
// served Services (Served), which costs a pointer comparison when nothing
// changed.
type Publisher struct {
	client  kubernetes.Interface
	lister  ServiceLister
	opts    PublisherOptions
	want    []corev1.LoadBalancerIngress
	limiter flowcontrol.RateLimiter
	log     *slog.Logger

	mu     sync.Mutex
	known  bool                          // Served was called at least once
	last   []*corev1.Service             // the list of the last Served call
	served map[types.NamespacedName]bool // derived from last, by Run
	addrs  map[string][]netip.Addr       // Pooled: the last Served call's addresses by "namespace/name"
	owned  func(netip.Addr) bool         // Pooled: whether an address is in one of our pools
	// wrote: the resourceVersion each Service had when we last patched
	// it; while the cache still shows that version, our write is in
	// flight through the watch and the Service is not queued again.
	wrote map[types.NamespacedName]string
	wake  loop.Wake
}

// NewPublisher returns a Publisher; nil when there is no address to publish.
func NewPublisher(client kubernetes.Interface, lister ServiceLister, opts PublisherOptions) *Publisher {
	if len(opts.Addresses) == 0 && !opts.Pooled {
		return nil
	}
	if opts.Workers <= 0 {
		opts.Workers = 4
	}
	if opts.Logger == nil {
		opts.Logger = slog.Default()
	}
	p := &Publisher{client: client, lister: lister, opts: opts, log: opts.Logger, wake: loop.NewWake(), wrote: map[types.NamespacedName]string{}}
	p.want = ingressFor(opts.Addresses)
	if opts.QPS > 0 {
		p.limiter = flowcontrol.NewTokenBucketRateLimiter(opts.QPS, max(opts.Burst, 1))
	}
	return p
}

func ingressFor(addrs []netip.Addr) []corev1.LoadBalancerIngress {
	proxy := corev1.LoadBalancerIPModeProxy
	out := make([]corev1.LoadBalancerIngress, len(addrs))
	for i, a := range addrs {
		out[i] = corev1.LoadBalancerIngress{IP: a.String(), IPMode: &proxy}
	}
	return out
}

// Served records which Services HAProxy now serves (a pass's
// desired.Result.Configured; not modified, not kept past the call unless it
// differs from the last one) and, with Pooled, every Service's addresses
// (kept; the caller makes a new map for every pass). It never blocks.
func (p *Publisher) Served(svcs []*corev1.Service, addrs map[string][]netip.Addr) {
	if p == nil {
		return
	}
	p.mu.Lock()
	same := p.known && len(svcs) == len(p.last)
	for i := 0; same && i < len(svcs); i++ {
		same = svcs[i] == p.last[i]
	}
	if p.opts.Pooled && same {
		same = maps.EqualFunc(addrs, p.addrs, slices.Equal[[]netip.Addr])
	}
	if !same {
		p.known, p.last, p.addrs = true, append([]*corev1.Service(nil), svcs...), addrs
	}
	p.mu.Unlock()
	if !same {
		p.wake.Poke()
	}
}

// Run writes statuses until ctx ends. Under leader election it runs only
// while this replica leads; each start re-examines every Service.
func (p *Publisher) Run(ctx context.Context) {
	if p == nil {
		return
	}
	loop.Writers[types.NamespacedName]{
		Name: "haproxy-k8s-sync-status", Workers: p.opts.Workers, Wake: p.wake,
		Enqueue: p.enqueueChanges, Write: p.write,
		OnError: func(k types.NamespacedName, err error, retries int) {
			p.log.Warn("could not write LoadBalancer status; will retry", "service", k.String(), "err", err, "retries", retries)
		},
	}.Run(ctx)
}

// enqueueChanges compares the status of every cached Service with what it
// should be and queues those that differ.
func (p *Publisher) enqueueChanges(q workqueue.TypedRateLimitingInterface[types.NamespacedName]) {
	p.mu.Lock()
	if !p.known {
		p.mu.Unlock()
		return // no pass has finished yet: nothing is known to be served
	}
	served := make(map[types.NamespacedName]bool, len(p.last))
	for _, s := range p.last {
		served[types.NamespacedName{Namespace: s.Namespace, Name: s.Name}] = true
	}
	p.served = served
	p.mu.Unlock()
	for _, s := range p.lister.Services() {
		k := types.NamespacedName{Namespace: s.Namespace, Name: s.Name}
		if _, write := p.desiredStatus(s, served[k]); write && !p.inFlight(k, s.ResourceVersion) {
			q.Add(k)
		}
	}
}

// inFlight reports whether we patched k when it had resourceVersion rv
// (the cache has not seen our write yet).
func (p *Publisher) inFlight(k types.NamespacedName, rv string) bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	w, ok := p.wrote[k]
	if ok && w != rv {
		delete(p.wrote, k)
	}
	return ok && w == rv
}

// desiredStatus says what s's ingress should be and whether a write is
// needed: our addresses if we serve it; empty if we do not but it carries
// exactly what we write (we wrote it: the Service left us, by class,
// annotation, type or selection); otherwise leave it alone (another load
// balancer's status).
func (p *Publisher) desiredStatus(s *corev1.Service, served bool) ([]corev1.LoadBalancerIngress, bool) {
	have := s.Status.LoadBalancer.Ingress
	if p.opts.Pooled {
		// The status is where a Service's address is kept (the pools
		// rebuild the allocation from it): it lists the assigned
		// addresses even while a port conflict keeps the Service out of
		// HAProxy, and is cleared only of what we write (ipMode Proxy).
		p.mu.Lock()
		mine := p.addrs[s.Namespace+"/"+s.Name]
		p.mu.Unlock()
		if len(mine) > 0 && s.Spec.Type == corev1.ServiceTypeLoadBalancer {
			want := ingressFor(mine)
			return want, !sameIngress(have, want)
		}
		p.mu.Lock()
		owned := p.owned
		p.mu.Unlock()
		return nil, len(have) > 0 && allProxy(have) && owned != nil && allOwned(have, owned)
	}
	if served && s.Spec.Type == corev1.ServiceTypeLoadBalancer {
		return p.want, !sameIngress(have, p.want)
	}
	return nil, len(have) > 0 && sameIngress(have, p.want)
}

// write patches one Service's status if it still differs, decided on the
// current cache. The patch names the cached resourceVersion: a Service
// changed meanwhile (another controller wrote its own status) is not
// overwritten, the write is retried on the newer object.
func (p *Publisher) write(ctx context.Context, k types.NamespacedName) error {
	s, ok := p.lister.Service(k.Namespace, k.Name)
	if !ok {
		return nil // deleted: nothing to clear
	}
	p.mu.Lock()
	served := p.served[k]
	p.mu.Unlock()
	want, needed := p.desiredStatus(s, served)
	if !needed || p.inFlight(k, s.ResourceVersion) {
		return nil
	}
	if want == nil {
		want = []corev1.LoadBalancerIngress{}
	}
	body, err := json.Marshal(map[string]any{
		"metadata": map[string]any{"resourceVersion": s.ResourceVersion},
		"status":   map[string]any{"loadBalancer": map[string]any{"ingress": want}},
	})
	if err != nil {
		return err
	}
	if p.limiter != nil {
		if err := p.limiter.Wait(ctx); err != nil {
			return err
		}
	}
	_, err = p.client.CoreV1().Services(k.Namespace).Patch(ctx, k.Name, types.MergePatchType, body, metav1.PatchOptions{}, "status")
	if apierrors.IsNotFound(err) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("status of %s: %w", k, err)
	}
	p.mu.Lock()
	p.wrote[k] = s.ResourceVersion
	p.mu.Unlock()
	return nil
}

// Owned tells the Publisher which addresses are its pools' (Pooled): a
// Service that is not served loses only a status of such addresses.
func (p *Publisher) Owned(owned func(netip.Addr) bool) {
	if p == nil {
		return
	}
	p.mu.Lock()
	p.owned = owned
	p.mu.Unlock()
}

func allOwned(in []corev1.LoadBalancerIngress, owned func(netip.Addr) bool) bool {
	for _, i := range in {
		a, err := netip.ParseAddr(i.IP)
		if err != nil || !owned(a.Unmap()) {
			return false
		}
	}
	return true
}

func allProxy(in []corev1.LoadBalancerIngress) bool {
	for _, i := range in {
		if i.IPMode == nil || *i.IPMode != corev1.LoadBalancerIPModeProxy || i.Hostname != "" {
			return false
		}
	}
	return true
}

func sameIngress(a, b []corev1.LoadBalancerIngress) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i].IP != b[i].IP || a[i].Hostname != "" || len(a[i].Ports) > 0 || (a[i].IPMode == nil) != (b[i].IPMode == nil) ||
			(a[i].IPMode != nil && *a[i].IPMode != *b[i].IPMode) {
			return false
		}
	}
	return true
}
