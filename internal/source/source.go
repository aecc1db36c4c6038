// Package source watches the Kubernetes objects the controller reads:
// Services, EndpointSlices and Nodes, through shared informers whose caches
// keep only the fields the desired package uses.
package source

import (
	"context"
	"fmt"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/dynamic/dynamicinformer"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/cache"

	"github.com/haproxy-k8s-sync/haproxy-k8s-sync/internal/desired"
	"github.com/haproxy-k8s-sync/haproxy-k8s-sync/internal/pools"
)

// Source is the informer-backed view of the cluster.
type Source struct {
	factory     informers.SharedInformerFactory
	nodeFactory informers.SharedInformerFactory
	services    cache.SharedIndexInformer
	slices      cache.SharedIndexInformer
	nodes       cache.SharedIndexInformer
	// With address pools (WithPools): the AddressPools and the
	// Namespaces (their labels, for a pool's namespaceSelector).
	poolFactory dynamicinformer.DynamicSharedInformerFactory
	pools       cache.SharedIndexInformer
	namespaces  cache.SharedIndexInformer

	// Snapshot's buffers, reused from pass to pass.
	svcBuf   []*corev1.Service
	sliceBuf []*desired.Slice
	nodeBuf  []*corev1.Node
}

// New builds the informers. With namespace set (single-Service mode),
// Services and EndpointSlices are watched in that namespace only.
func New(client kubernetes.Interface, namespace string) *Source {
	opts := []informers.SharedInformerOption{informers.WithTransform(Slim)}
	if namespace != "" {
		opts = append(opts, informers.WithNamespace(namespace))
	}
	f := informers.NewSharedInformerFactoryWithOptions(client, 0, opts...)
	s := &Source{
		factory:  f,
		services: f.Core().V1().Services().Informer(),
		slices:   f.Discovery().V1().EndpointSlices().Informer(),
	}
	// Nodes are cluster-scoped: a namespaced factory would not list them.
	nf := informers.NewSharedInformerFactoryWithOptions(client, 0, informers.WithTransform(Slim))
	s.nodes = nf.Core().V1().Nodes().Informer()
	s.nodeFactory = nf
	return s
}

// WithPools also watches the AddressPools (through dyn) and the
// Namespaces. Call before OnChange and Start. The CRD must be installed:
// without it the caches never sync.
func (s *Source) WithPools(dyn dynamic.Interface) {
	s.poolFactory = dynamicinformer.NewDynamicSharedInformerFactory(dyn, 0)
	s.pools = s.poolFactory.ForResource(pools.GVR).Informer()
	s.namespaces = s.nodeFactory.Core().V1().Namespaces().Informer()
}

// Pooled reports whether WithPools was called.
func (s *Source) Pooled() bool { return s.pools != nil }

// Pools lists the cached AddressPools and Namespaces. Shared with the
// cache: not to be modified.
func (s *Source) Pools() ([]*unstructured.Unstructured, []*corev1.Namespace) {
	var ps []*unstructured.Unstructured
	for _, o := range s.pools.GetStore().List() {
		if u, ok := o.(*unstructured.Unstructured); ok {
			ps = append(ps, u)
		}
	}
	var ns []*corev1.Namespace
	for _, o := range s.namespaces.GetStore().List() {
		if n, ok := o.(*corev1.Namespace); ok {
			ns = append(ns, n)
		}
	}
	return ps, ns
}

func (s *Source) informers() []cache.SharedIndexInformer {
	out := []cache.SharedIndexInformer{s.services, s.slices, s.nodes}
	if s.pools != nil {
		out = append(out, s.pools, s.namespaces)
	}
	return out
}

// OnChange registers fn to run on every add, update and delete.
func (s *Source) OnChange(fn func()) error {
	h := cache.ResourceEventHandlerFuncs{
		AddFunc:    func(any) { fn() },
		UpdateFunc: func(any, any) { fn() },
		DeleteFunc: func(any) { fn() },
	}
	for _, inf := range s.informers() {
		if _, err := inf.AddEventHandler(h); err != nil {
			return err
		}
	}
	return nil
}

// Start runs the informers and waits until every cache has synced. It
// returns an error if ctx ends first: the controller never works on a
// partial cache.
func (s *Source) Start(ctx context.Context, timeout time.Duration) error {
	s.factory.Start(ctx.Done())
	s.nodeFactory.Start(ctx.Done())
	if s.poolFactory != nil {
		s.poolFactory.Start(ctx.Done())
	}
	wctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	var synced []cache.InformerSynced
	for _, inf := range s.informers() {
		synced = append(synced, inf.HasSynced)
	}
	if !cache.WaitForCacheSync(wctx.Done(), synced...) {
		return fmt.Errorf("informer caches did not sync within %s", timeout)
	}
	return nil
}

// Synced reports whether all caches have synced.
func (s *Source) Synced() bool {
	for _, inf := range s.informers() {
		if !inf.HasSynced() {
			return false
		}
	}
	return true
}

// Snapshot lists the cached objects. They are shared with the cache: callers
// must not modify them. The slices are reused by the next call (a pass
// snapshots tens of thousands of objects, many times a second): callers
// must not keep them past the pass. Passes are serial.
func (s *Source) Snapshot() (svcs []*corev1.Service, eps []*desired.Slice, nodes []*corev1.Node) {
	s.svcBuf = listInto(s.svcBuf, s.services)
	s.sliceBuf = listInto(s.sliceBuf, s.slices)
	s.nodeBuf = listInto(s.nodeBuf, s.nodes)
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
