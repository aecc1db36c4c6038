package source

import (
	"context"
	"fmt"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/cache"
	gwv1 "sigs.k8s.io/gateway-api/apis/v1"
	gwv1beta1 "sigs.k8s.io/gateway-api/apis/v1beta1"
	gwclient "sigs.k8s.io/gateway-api/pkg/client/clientset/versioned"
	gwinformers "sigs.k8s.io/gateway-api/pkg/client/informers/externalversions"

	"github.com/haproxy-k8s-sync/haproxy-k8s-sync/internal/desired"
	"github.com/haproxy-k8s-sync/haproxy-k8s-sync/internal/gateway"
)

// Gateway is the informer-backed view of the Gateway API mode: the
// gateway.networking.k8s.io objects (GatewayClass, Gateway v1; TCPRoute,
// TLSRoute, UDPRoute v1, as the v1.6 standard bundle serves them;
// ReferenceGrant v1beta1), and the Services, EndpointSlices (slimmed as
// in the Services mode) and Namespaces (labels, for allowedRoutes) they
// refer to.
type Gateway struct {
	kube, gw   informers.SharedInformerFactory
	gwf        gwinformers.SharedInformerFactory
	classes    cache.SharedIndexInformer
	gateways   cache.SharedIndexInformer
	tcp        cache.SharedIndexInformer
	tls        cache.SharedIndexInformer
	udp        cache.SharedIndexInformer
	grants     cache.SharedIndexInformer
	services   cache.SharedIndexInformer
	slices     cache.SharedIndexInformer
	namespaces cache.SharedIndexInformer
	udpOn      bool
}

// NewGateway builds the informers. Without udp, UDPRoutes are not
// watched (no UDP listener is served then, and the CRD may be absent).
func NewGateway(client kubernetes.Interface, gc gwclient.Interface, udp bool) *Gateway {
	kf := informers.NewSharedInformerFactoryWithOptions(client, 0, informers.WithTransform(Slim))
	gf := gwinformers.NewSharedInformerFactoryWithOptions(gc, 0, gwinformers.WithTransform(dropManaged))
	g := &Gateway{kube: kf, gwf: gf, udpOn: udp,
		classes:    gf.Gateway().V1().GatewayClasses().Informer(),
		gateways:   gf.Gateway().V1().Gateways().Informer(),
		tcp:        gf.Gateway().V1().TCPRoutes().Informer(),
		tls:        gf.Gateway().V1().TLSRoutes().Informer(),
		grants:     gf.Gateway().V1beta1().ReferenceGrants().Informer(),
		services:   kf.Core().V1().Services().Informer(),
		slices:     kf.Discovery().V1().EndpointSlices().Informer(),
		namespaces: kf.Core().V1().Namespaces().Informer(),
	}
	if udp {
		g.udp = gf.Gateway().V1().UDPRoutes().Informer()
	}
	return g
}

// dropManaged keeps the caches free of managedFields, the bulk of a
// small object.
func dropManaged(obj any) (any, error) {
	if m, ok := obj.(metav1.Object); ok {
		m.SetManagedFields(nil)
	}
	return obj, nil
}

func (g *Gateway) all() []cache.SharedIndexInformer {
	out := []cache.SharedIndexInformer{g.classes, g.gateways, g.tcp, g.tls, g.grants, g.services, g.slices, g.namespaces}
	if g.udp != nil {
		out = append(out, g.udp)
	}
	return out
}

// OnChange registers fn to run on every add, update and delete.
func (g *Gateway) OnChange(fn func()) error {
	h := cache.ResourceEventHandlerFuncs{AddFunc: func(any) { fn() }, UpdateFunc: func(any, any) { fn() }, DeleteFunc: func(any) { fn() }}
	for _, inf := range g.all() {
		if _, err := inf.AddEventHandler(h); err != nil {
			return err
		}
	}
	return nil
}

// Start runs the informers and waits until every cache has synced (a
// CRD that is not installed never syncs: the error names the wait).
func (g *Gateway) Start(ctx context.Context, timeout time.Duration) error {
	g.kube.Start(ctx.Done())
	g.gwf.Start(ctx.Done())
	wctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	var synced []cache.InformerSynced
	for _, inf := range g.all() {
		synced = append(synced, inf.HasSynced)
	}
	if !cache.WaitForCacheSync(wctx.Done(), synced...) {
		return fmt.Errorf("informer caches did not sync within %s (are the Gateway API v1.6 standard CRDs installed?)", timeout)
	}
	return nil
}

// Synced reports whether all caches have synced.
func (g *Gateway) Synced() bool {
	for _, inf := range g.all() {
		if !inf.HasSynced() {
			return false
		}
	}
	return true
}

// Snapshot lists the cached objects, shared with the caches: callers
// must not modify them.
func (g *Gateway) Snapshot() gateway.Input {
	in := gateway.Input{
		Classes:    listOf[*gwv1.GatewayClass](g.classes),
		Gateways:   listOf[*gwv1.Gateway](g.gateways),
		TCPRoutes:  listOf[*gwv1.TCPRoute](g.tcp),
		TLSRoutes:  listOf[*gwv1.TLSRoute](g.tls),
		Grants:     listOf[*gwv1beta1.ReferenceGrant](g.grants),
		Services:   listOf[*corev1.Service](g.services),
		Slices:     listOf[*desired.Slice](g.slices),
		Namespaces: listOf[*corev1.Namespace](g.namespaces),
	}
	if g.udp != nil {
		in.UDPRoutes = listOf[*gwv1.UDPRoute](g.udp)
	}
	return in
}

func listOf[T any](inf cache.SharedIndexInformer) []T {
	return listInto[T](nil, inf)
}

// Object returns the cached object of an informer by namespace/name
// ("" namespace for cluster-scoped ones), for the status writer.
func (g *Gateway) Object(kind, namespace, name string) (any, bool) {
	var inf cache.SharedIndexInformer
	switch kind {
	case "GatewayClass":
		inf = g.classes
	case "Gateway":
		inf = g.gateways
	case gateway.KindTCPRoute:
		inf = g.tcp
	case gateway.KindTLSRoute:
		inf = g.tls
	case gateway.KindUDPRoute:
		inf = g.udp
	}
	if inf == nil {
		return nil, false
	}
	key := name
	if namespace != "" {
		key = namespace + "/" + name
	}
	o, ok, err := inf.GetStore().GetByKey(key)
	return o, ok && err == nil
}
