// Package source watches the Kubernetes objects the controller reads:
// Services, EndpointSlices and Nodes, through shared informers whose caches
// keep only the fields the desired package uses.
package source

import (
	"context"
	"fmt"
	"time"

	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/dynamic/dynamicinformer"
	"k8s.io/client-go/informers"
	coreinformers "k8s.io/client-go/informers/core/v1"
	discoveryinformers "k8s.io/client-go/informers/discovery/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/cache"

	"github.com/haproxy-k8s-sync/haproxy-k8s-sync/internal/desired"
	"github.com/haproxy-k8s-sync/haproxy-k8s-sync/internal/kubeclient"
	"github.com/haproxy-k8s-sync/haproxy-k8s-sync/internal/pools"
)

// Source is the informer-backed view of the cluster.
type Source struct {
	client    kubernetes.Interface
	namespace string
	dyn       dynamic.Interface // with address pools (WithPools)
	gwOn      bool              // and the Gateways' addresses (WithGateways)
	claimsOn  bool              // and the address claims (WithClaims)

	// The informers in use; a relist after an apiserver outage
	// (relist.go) replaces them by a fresh, synced generation.
	generations[informerSet, *informerSet]

	// Snapshot's buffers, reused from pass to pass.
	svcBuf   []*corev1.Service
	sliceBuf []*desired.Slice
	nodeBuf  []*corev1.Node
}

// informerSet is one generation of the informers, started and stopped
// together.
type informerSet struct {
	services cache.SharedIndexInformer
	slices   cache.SharedIndexInformer
	nodes    cache.SharedIndexInformer
	// With address pools (WithPools): the AddressPools and the
	// Namespaces (their labels, for a pool's namespaceSelector).
	poolFactory dynamicinformer.DynamicSharedInformerFactory
	pools       cache.SharedIndexInformer
	namespaces  cache.SharedIndexInformer
	gateways    cache.SharedIndexInformer // WithGateways
	claims      cache.SharedIndexInformer // WithClaims
	informerGen

	// The Services, EndpointSlices and Nodes as slices kept by their
	// events (live.go), for Snapshot; their handlers run from them.
	liveSvcs   *live[*corev1.Service]
	liveSlices *live[*desired.Slice]
	liveNodes  *live[*corev1.Node]
}

// register runs h on the events of every informer of the set: on the
// Services', EndpointSlices' and Nodes' after their live slices changed.
func (s *informerSet) register(h handler) error {
	s.liveSvcs.handlers = append(s.liveSvcs.handlers, h)
	s.liveSlices.handlers = append(s.liveSlices.handlers, h)
	s.liveNodes.handlers = append(s.liveNodes.handlers, h)
	var rest []cache.SharedIndexInformer
	for _, inf := range s.informers {
		if inf != s.services && inf != s.slices && inf != s.nodes {
			rest = append(rest, inf)
		}
	}
	return registerAll(h, rest)
}

// synced reports whether every cache synced and the live slices hold
// their first lists.
func (s *informerSet) synced() bool {
	return s.informerGen.synced() && s.liveSvcs.synced() && s.liveSlices.synced() && s.liveNodes.synced()
}

// New builds the informers. With namespace set (single-Service mode),
// Services and EndpointSlices are watched in that namespace only.
func New(client kubernetes.Interface, namespace string) *Source {
	s := &Source{client: client, namespace: namespace}
	s.rebuild(s.build)
	return s
}

// build makes a new generation of the informers (not started).
func (s *Source) build() *informerSet {
	opts := []informers.SharedInformerOption{informers.WithTransform(Slim)}
	if s.namespace != "" {
		opts = append(opts, informers.WithNamespace(s.namespace))
	}
	f := informers.NewSharedInformerFactoryWithOptions(s.client, 0, opts...)
	// Without the namespace index the typed informers carry (a set of
	// every key per namespace, ~2 MB of heap at 10,000 Services and their
	// slices): nothing here lists by namespace.
	ns := s.namespace // "" is every namespace
	set := &informerSet{
		services: f.InformerFor(&corev1.Service{}, func(c kubernetes.Interface, resync time.Duration) cache.SharedIndexInformer {
			return coreinformers.NewFilteredServiceInformer(c, ns, resync, cache.Indexers{}, nil)
		}),
		slices: f.InformerFor(&discoveryv1.EndpointSlice{}, func(c kubernetes.Interface, resync time.Duration) cache.SharedIndexInformer {
			return discoveryinformers.NewFilteredEndpointSliceInformer(c, ns, resync, cache.Indexers{}, nil)
		}),
	}
	// Nodes are cluster-scoped: a namespaced factory would not list them.
	// Only the Services and EndpointSlices above stream their first
	// list; the rest list plainly (kubeclient/plain.go).
	nf := informers.NewSharedInformerFactoryWithOptions(kubeclient.PlainLists(s.client), 0, informers.WithTransform(Slim))
	set.nodes = nf.Core().V1().Nodes().Informer()
	set.liveSvcs, set.liveSlices, set.liveNodes = newLive[*corev1.Service](set.services),
		newLive[*desired.Slice](set.slices), newLive[*corev1.Node](set.nodes)
	if s.dyn != nil {
		set.poolFactory = dynamicinformer.NewDynamicSharedInformerFactory(kubeclient.PlainListsDynamic(s.dyn), 0)
		set.pools = set.poolFactory.ForResource(pools.GVR).Informer()
		set.namespaces = nf.Core().V1().Namespaces().Informer()
		if s.gwOn {
			set.gateways = set.poolFactory.ForResource(GatewayGVR).Informer()
		}
	}
	set.starters = []interface{ Start(<-chan struct{}) }{f, nf}
	set.informers = []cache.SharedIndexInformer{set.services, set.slices, set.nodes}
	if set.pools != nil {
		set.starters = append(set.starters, set.poolFactory)
		set.informers = append(set.informers, set.pools, set.namespaces)
	}
	if set.gateways != nil {
		set.informers = append(set.informers, set.gateways)
	}
	if s.claimsOn {
		var cf informers.SharedInformerFactory
		cf, set.claims = claimsInformer(s.client)
		set.starters = append(set.starters, cf)
		set.informers = append(set.informers, set.claims)
	}
	return set
}

// WithPools also watches the AddressPools (through dyn) and the
// Namespaces. Call before OnChange and Start. The CRD must be installed:
// without it the caches never sync.
func (s *Source) WithPools(dyn dynamic.Interface) {
	s.dyn = dyn
	s.rebuild(s.build)
}

// Pooled reports whether WithPools was called.
func (s *Source) Pooled() bool { return s.dyn != nil }

// Pools lists the cached AddressPools and Namespaces. Shared with the
// cache: not to be modified.
func (s *Source) Pools() ([]*unstructured.Unstructured, []*corev1.Namespace) {
	set := s.current()
	var ps []*unstructured.Unstructured
	for _, o := range set.pools.GetStore().List() {
		if u, ok := o.(*unstructured.Unstructured); ok {
			ps = append(ps, u)
		}
	}
	var ns []*corev1.Namespace
	for _, o := range set.namespaces.GetStore().List() {
		if n, ok := o.(*corev1.Namespace); ok {
			ns = append(ns, n)
		}
	}
	return ps, ns
}

// Start runs the informers and waits until every cache has synced. It
// returns an error if ctx ends first: the controller never works on a
// partial cache. With RelistAfterOutage, a relist started while it waits
// (the apiserver unreachable at first, then back) counts too.
func (s *Source) Start(ctx context.Context, timeout time.Duration) error {
	if !s.startAndWait(ctx, timeout) {
		return fmt.Errorf("informer caches did not sync within %s", timeout)
	}
	return nil
}

// Snapshot lists the cached objects. They are shared with the cache: callers
// must not modify them. The slices are reused by the next call (a pass
// snapshots tens of thousands of objects, many times a second): callers
// must not keep them past the pass. Passes are serial.
func (s *Source) Snapshot() (svcs []*corev1.Service, eps []*desired.Slice, nodes []*corev1.Node) {
	set := s.current()
	var ok [3]bool
	s.svcBuf, ok[0] = set.liveSvcs.into(s.svcBuf)
	s.sliceBuf, ok[1] = set.liveSlices.into(s.sliceBuf)
	s.nodeBuf, ok[2] = set.liveNodes.into(s.nodeBuf)
	if !ok[0] {
		s.svcBuf = listInto(s.svcBuf, set.services)
	}
	if !ok[1] {
		s.sliceBuf = listInto(s.sliceBuf, set.slices)
	}
	if !ok[2] {
		s.nodeBuf = listInto(s.nodeBuf, set.nodes)
	}
	return s.svcBuf, s.sliceBuf, s.nodeBuf
}

// listInto lists the informer's objects into buf, reusing its storage; the
// tail left from a longer list is cleared so it keeps no object alive.
func listInto[T any](buf []T, inf cache.SharedIndexInformer) []T {
	old := len(buf)
	buf = buf[:0]
	for _, o := range inf.GetStore().List() {
		buf = append(buf, o.(T))
	}
	if len(buf) < old {
		clear(buf[len(buf):old])
	}
	return buf
}
