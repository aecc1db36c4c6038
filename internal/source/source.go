// Package source watches the Kubernetes objects the controller reads:
// Services, EndpointSlices and Nodes, through shared informers whose caches
// keep only the fields the desired package uses.
package source

import (
	"context"
	"fmt"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/cache"

	"github.com/haproxy-k8s-sync/haproxy-k8s-sync/internal/desired"
)

// Source is the informer-backed view of the cluster.
type Source struct {
	factory     informers.SharedInformerFactory
	nodeFactory informers.SharedInformerFactory
	services    cache.SharedIndexInformer
	slices      cache.SharedIndexInformer
	nodes       cache.SharedIndexInformer

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

// OnChange registers fn to run on every add, update and delete.
func (s *Source) OnChange(fn func()) error {
	h := cache.ResourceEventHandlerFuncs{
		AddFunc:    func(any) { fn() },
		UpdateFunc: func(any, any) { fn() },
		DeleteFunc: func(any) { fn() },
	}
	for _, inf := range []cache.SharedIndexInformer{s.services, s.slices, s.nodes} {
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
	wctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	if !cache.WaitForCacheSync(wctx.Done(), s.services.HasSynced, s.slices.HasSynced, s.nodes.HasSynced) {
		return fmt.Errorf("informer caches did not sync within %s", timeout)
	}
	return nil
}

// Synced reports whether all caches have synced.
func (s *Source) Synced() bool {
	return s.services.HasSynced() && s.slices.HasSynced() && s.nodes.HasSynced()
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
