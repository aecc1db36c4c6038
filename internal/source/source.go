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
// must not modify them.
func (s *Source) Snapshot() (svcs []*corev1.Service, eps []*desired.Slice, nodes []*corev1.Node) {
	for _, o := range s.services.GetStore().List() {
		svcs = append(svcs, o.(*corev1.Service))
	}
	for _, o := range s.slices.GetStore().List() {
		eps = append(eps, o.(*desired.Slice))
	}
	for _, o := range s.nodes.GetStore().List() {
		nodes = append(nodes, o.(*corev1.Node))
	}
	return svcs, eps, nodes
}
