package apiserverlb

import (
	"context"
	"slices"

	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/cache"

	"github.com/haproxy-k8s-sync/haproxy-k8s-sync/internal/kubeclient"
	"github.com/haproxy-k8s-sync/haproxy-k8s-sync/internal/source"
)

// The EndpointSlices of default/kubernetes, which the apiservers maintain.
const (
	kubernetesNamespace = "default"
	kubernetesSelector  = discoveryv1.LabelServiceName + "=kubernetes"
)

// watcher holds an informer for each cluster source in use, each watching
// only what its source reads (that is all the RBAC of this mode allows).
type watcher struct {
	factories []informers.SharedInformerFactory
	slices    cache.SharedIndexInformer
	nodes     cache.SharedIndexInformer
	cms       cache.SharedIndexInformer
	cmName    string
	cancel    context.CancelFunc
}

// usesAPI reports whether any source needs the cluster.
func usesAPI(sources []string) bool {
	return slices.ContainsFunc(sources, func(s string) bool { return s != SourceStatic })
}

func newWatcher(client kubernetes.Interface, o Options) *watcher {
	w := &watcher{cmName: o.ConfigMapName}
	// Only the fields we read are kept.
	slim := informers.WithTransform(func(obj any) (any, error) {
		if m, ok := obj.(metav1.Object); ok {
			m.SetManagedFields(nil)
			m.SetAnnotations(nil)
		}
		return obj, nil
	})
	factory := func(opts ...informers.SharedInformerOption) informers.SharedInformerFactory {
		f := informers.NewSharedInformerFactoryWithOptions(kubeclient.PlainLists(client), 0, append(opts, slim)...)
		w.factories = append(w.factories, f)
		return f
	}
	for _, s := range o.Sources {
		switch s {
		case SourceEndpointSlice:
			w.slices = factory(informers.WithNamespace(kubernetesNamespace), informers.WithTweakListOptions(func(lo *metav1.ListOptions) {
				lo.LabelSelector = kubernetesSelector
			})).Discovery().V1().EndpointSlices().Informer()
		case SourceNodes:
			w.nodes = factory(informers.WithTweakListOptions(func(lo *metav1.ListOptions) {
				lo.LabelSelector = ControlPlaneLabel
			})).Core().V1().Nodes().Informer()
		case SourceConfigMap:
			// A field selector on the name: RBAC can then grant this
			// one ConfigMap by resourceNames.
			w.cms = factory(informers.WithNamespace(o.ConfigMapNamespace), informers.WithTweakListOptions(func(lo *metav1.ListOptions) {
				lo.FieldSelector = "metadata.name=" + o.ConfigMapName
			})).Core().V1().ConfigMaps().Informer()
		}
	}
	return w
}

func (w *watcher) informers() []cache.SharedIndexInformer {
	var out []cache.SharedIndexInformer
	for _, inf := range []cache.SharedIndexInformer{w.slices, w.nodes, w.cms} {
		if inf != nil {
			out = append(out, inf)
		}
	}
	return out
}

// start runs the informers until ctx ends or stop is called; onChange
// is called on every event.
func (w *watcher) start(ctx context.Context, onChange func()) error {
	ctx, w.cancel = context.WithCancel(ctx)
	h := cache.ResourceEventHandlerFuncs{
		AddFunc:    func(any) { onChange() },
		UpdateFunc: func(any, any) { onChange() },
		DeleteFunc: func(any) { onChange() },
	}
	for _, inf := range w.informers() {
		if _, err := inf.AddEventHandler(h); err != nil {
			return err
		}
	}
	for _, f := range w.factories {
		f.Start(ctx.Done())
	}
	return nil
}

func (w *watcher) stop() { w.cancel() }

// waitSynced blocks until every cache has synced or ctx ends, asking as
// often as the Services mode's start does (source.WaitSynced).
func (w *watcher) waitSynced(ctx context.Context) bool {
	return source.WaitSynced(ctx, w.synced)
}

func (w *watcher) synced() bool {
	for _, inf := range w.informers() {
		if !inf.HasSynced() {
			return false
		}
	}
	return true
}

// found lists what each cluster source yields from the caches.
func (w *watcher) found(port uint16) map[string]Found {
	out := map[string]Found{}
	if w.slices != nil {
		out[SourceEndpointSlice] = Found{Servers: FromEndpointSlices(list[*discoveryv1.EndpointSlice](w.slices))}
	}
	if w.nodes != nil {
		out[SourceNodes] = Found{Servers: FromNodes(list[*corev1.Node](w.nodes), port)}
	}
	if w.cms != nil {
		var cm *corev1.ConfigMap
		for _, c := range list[*corev1.ConfigMap](w.cms) {
			if c.Name == w.cmName {
				cm = c
			}
		}
		s, err := FromConfigMap(cm, port)
		out[SourceConfigMap] = Found{Servers: s, Err: err}
	}
	return out
}

func list[T any](inf cache.SharedIndexInformer) []T {
	objs := inf.GetStore().List()
	out := make([]T, 0, len(objs))
	for _, o := range objs {
		if t, ok := o.(T); ok {
			out = append(out, t)
		}
	}
	return out
}
