package source

import (
	"context"
	"fmt"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/dynamic/dynamicinformer"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/cache"
	gwv1 "sigs.k8s.io/gateway-api/apis/v1"
	gwv1a2 "sigs.k8s.io/gateway-api/apis/v1alpha2"
	gwv1beta1 "sigs.k8s.io/gateway-api/apis/v1beta1"
	gwclient "sigs.k8s.io/gateway-api/pkg/client/clientset/versioned"
	gwinformers "sigs.k8s.io/gateway-api/pkg/client/informers/externalversions"

	"github.com/haproxy-k8s-sync/haproxy-k8s-sync/internal/desired"
	"github.com/haproxy-k8s-sync/haproxy-k8s-sync/internal/gateway"
	"github.com/haproxy-k8s-sync/haproxy-k8s-sync/internal/pools"
)

// Gateway is the informer-backed view of the Gateway API mode: the
// gateway.networking.k8s.io objects (GatewayClass, Gateway v1; TCPRoute,
// TLSRoute, UDPRoute v1, as the v1.6 standard bundle serves them;
// ReferenceGrant v1beta1), and the Services, EndpointSlices (slimmed as
// in the Services mode) and Namespaces (labels, for allowedRoutes) they
// refer to; HTTPRoutes v1 (parents and hostnames only) and Secrets (only
// whether each holds a certificate and key: gatewaysecrets.go) for the
// status of HTTP and HTTPS listeners, which are status only.
type Gateway struct {
	kube, sec  informers.SharedInformerFactory
	gwf        gwinformers.SharedInformerFactory
	classes    cache.SharedIndexInformer
	gateways   cache.SharedIndexInformer
	tcp        cache.SharedIndexInformer
	tls        cache.SharedIndexInformer
	udp        cache.SharedIndexInformer
	http       cache.SharedIndexInformer
	secrets    cache.SharedIndexInformer
	grants     cache.SharedIndexInformer
	services   cache.SharedIndexInformer
	slices     cache.SharedIndexInformer
	namespaces cache.SharedIndexInformer
	udpOn      bool
	// With --address-pools (WithPools): the AddressPools.
	poolFactory dynamicinformer.DynamicSharedInformerFactory
	pools       cache.SharedIndexInformer
}

// NewGateway builds the informers. routes says which version of each
// route kind (gateway.KindTCPRoute...) to watch: RouteV1, RouteV1Alpha2
// (older bundles; the objects are converted to v1, Compute sees one
// kind), or "" for a kind the cluster does not serve (not watched; see
// RouteVersions). Without udp, UDPRoutes are not watched either.
func NewGateway(client kubernetes.Interface, gc gwclient.Interface, udp bool, routes map[string]string) *Gateway {
	kf := informers.NewSharedInformerFactoryWithOptions(client, 0, informers.WithTransform(Slim))
	gf := gwinformers.NewSharedInformerFactoryWithOptions(gc, 0, gwinformers.WithTransform(gatewayTransform))
	sf := informers.NewSharedInformerFactoryWithOptions(client, 0, informers.WithTransform(secretTransform))
	g := &Gateway{kube: kf, sec: sf, gwf: gf, udpOn: udp,
		secrets:    sf.Core().V1().Secrets().Informer(),
		classes:    gf.Gateway().V1().GatewayClasses().Informer(),
		gateways:   gf.Gateway().V1().Gateways().Informer(),
		grants:     gf.Gateway().V1beta1().ReferenceGrants().Informer(),
		services:   kf.Core().V1().Services().Informer(),
		slices:     kf.Discovery().V1().EndpointSlices().Informer(),
		namespaces: kf.Core().V1().Namespaces().Informer(),
	}
	v1, v1a2 := gf.Gateway().V1(), gf.Gateway().V1alpha2()
	switch routes[gateway.KindTCPRoute] {
	case RouteV1:
		g.tcp = v1.TCPRoutes().Informer()
	case RouteV1Alpha2:
		g.tcp = v1a2.TCPRoutes().Informer()
	}
	switch routes[gateway.KindTLSRoute] {
	case RouteV1:
		g.tls = v1.TLSRoutes().Informer()
	case RouteV1Alpha2:
		g.tls = v1a2.TLSRoutes().Informer()
	}
	if routes[gateway.KindHTTPRoute] == RouteV1 {
		g.http = v1.HTTPRoutes().Informer()
	}
	switch {
	case !udp:
	case routes[gateway.KindUDPRoute] == RouteV1:
		g.udp = v1.UDPRoutes().Informer()
	case routes[gateway.KindUDPRoute] == RouteV1Alpha2:
		g.udp = v1a2.UDPRoutes().Informer()
	}
	return g
}

// gatewayTransform keeps the caches free of managedFields, the bulk of a
// small object, and turns v1alpha2 routes into their v1 form.
func gatewayTransform(obj any) (any, error) {
	if m, ok := obj.(metav1.Object); ok {
		m.SetManagedFields(nil)
	}
	switch o := obj.(type) {
	case *gwv1a2.TCPRoute:
		return convert[gwv1.TCPRoute](o)
	case *gwv1a2.TLSRoute:
		return convert[gwv1.TLSRoute](o)
	case *gwv1a2.UDPRoute:
		return convert[gwv1.UDPRoute](o)
	case *gwv1.HTTPRoute:
		// Counted only: parents and hostnames.
		return &gwv1.HTTPRoute{ObjectMeta: o.ObjectMeta, Spec: gwv1.HTTPRouteSpec{CommonRouteSpec: o.Spec.CommonRouteSpec, Hostnames: o.Spec.Hostnames}}, nil
	}
	return obj, nil
}

func (g *Gateway) all() []cache.SharedIndexInformer {
	out := []cache.SharedIndexInformer{g.classes, g.gateways, g.grants, g.services, g.slices, g.namespaces, g.secrets}
	for _, r := range []cache.SharedIndexInformer{g.tcp, g.tls, g.udp, g.http, g.pools} {
		if r != nil {
			out = append(out, r)
		}
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
	g.sec.Start(ctx.Done())
	g.gwf.Start(ctx.Done())
	if g.poolFactory != nil {
		g.poolFactory.Start(ctx.Done())
	}
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
	return gateway.Input{
		Classes:    listOf[*gwv1.GatewayClass](g.classes),
		Gateways:   listOf[*gwv1.Gateway](g.gateways),
		TCPRoutes:  listOf[*gwv1.TCPRoute](g.tcp),
		TLSRoutes:  listOf[*gwv1.TLSRoute](g.tls),
		UDPRoutes:  listOf[*gwv1.UDPRoute](g.udp),
		HTTPRoutes: listOf[*gwv1.HTTPRoute](g.http),
		Secrets:    listOf[*gateway.Secret](g.secrets),
		Grants:     listOf[*gwv1beta1.ReferenceGrant](g.grants),
		Services:   listOf[*corev1.Service](g.services),
		Slices:     listOf[*desired.Slice](g.slices),
		Namespaces: listOf[*corev1.Namespace](g.namespaces),
	}
}

func listOf[T any](inf cache.SharedIndexInformer) []T {
	if inf == nil {
		return nil
	}
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

// WithPools also watches the AddressPools (through dyn), for Gateways'
// own addresses. Call before OnChange and Start. The CRD must be
// installed: without it the caches never sync.
func (g *Gateway) WithPools(dyn dynamic.Interface) {
	g.poolFactory = dynamicinformer.NewDynamicSharedInformerFactory(dyn, 0)
	g.pools = g.poolFactory.ForResource(pools.GVR).Informer()
}

// Pools lists the cached AddressPools (none without WithPools), shared
// with the cache: not to be modified.
func (g *Gateway) Pools() []*unstructured.Unstructured {
	return listOf[*unstructured.Unstructured](g.pools)
}
