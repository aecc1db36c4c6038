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
	coreinformers "k8s.io/client-go/informers/core/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/cache"
	gwv1 "sigs.k8s.io/gateway-api/apis/v1"
	gwv1a2 "sigs.k8s.io/gateway-api/apis/v1alpha2"
	gwv1beta1 "sigs.k8s.io/gateway-api/apis/v1beta1"
	gwclient "sigs.k8s.io/gateway-api/pkg/client/clientset/versioned"
	gwinformers "sigs.k8s.io/gateway-api/pkg/client/informers/externalversions"

	"github.com/haproxy-k8s-sync/haproxy-k8s-sync/internal/desired"
	"github.com/haproxy-k8s-sync/haproxy-k8s-sync/internal/gateway"
	"github.com/haproxy-k8s-sync/haproxy-k8s-sync/internal/kubeclient"
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
	client kubernetes.Interface
	gc     gwclient.Interface
	udpOn  bool
	routes map[string]string
	dyn    dynamic.Interface // with --address-pools (WithPools)
	// claimsOn: and the address claims (WithClaims)
	claimsOn bool
	// ingressOn: and the Ingresses (WithIngress, gatewayingress.go)
	ingressOn   bool
	ingressCert gateway.Key
	ingressCMs  []string // "namespace/name" of ConfigMaps the Ingress compiler reads besides (WithIngressConfigMaps)

	// The named Secrets' problems logged (gatewaysecrets.go).
	secretState secretState

	// The informers in use; a relist after an apiserver outage
	// (relist.go) replaces them by a fresh, synced generation.
	generations[gatewaySet, *gatewaySet]
}

// gatewaySet is one generation of the Gateway source's informers.
type gatewaySet struct {
	classes    cache.SharedIndexInformer
	gateways   cache.SharedIndexInformer
	tcp        cache.SharedIndexInformer
	tls        cache.SharedIndexInformer
	udp        cache.SharedIndexInformer
	http       cache.SharedIndexInformer
	grpc       cache.SharedIndexInformer
	secrets    cache.SharedIndexInformer
	grants     cache.SharedIndexInformer
	services   cache.SharedIndexInformer
	slices     cache.SharedIndexInformer
	namespaces cache.SharedIndexInformer
	// With --address-pools (WithPools): the AddressPools.
	poolFactory dynamicinformer.DynamicSharedInformerFactory
	pools       cache.SharedIndexInformer
	claims      cache.SharedIndexInformer // WithClaims
	ing         ingressSet                // WithIngress
	btls        btlsSet                   // BackendTLSPolicies (gatewaybtls.go)
	lsets       cache.SharedIndexInformer // ListenerSets (gatewaylistenersets.go)
	informerGen
	// liveHTTP: the HTTPRoutes kept by their events with a journal of
	// the changed ones (journal.go), for SnapshotTold; their handlers
	// run from it.
	liveHTTP *live[*gwv1.HTTPRoute]
}

// register runs h on the events of every informer of the set: on the
// HTTPRoutes' after their live list and journal changed (a pass asked
// for by an HTTPRoute's event finds it in the journal).
func (s *gatewaySet) register(h handler) error {
	if s.liveHTTP == nil {
		return s.informerGen.register(h)
	}
	s.liveHTTP.handlers = append(s.liveHTTP.handlers, h)
	var rest []cache.SharedIndexInformer
	for _, inf := range s.informers {
		if inf != s.http {
			rest = append(rest, inf)
		}
	}
	return registerAll(h, rest)
}

// synced: every cache synced, the HTTPRoutes' live list too.
func (s *gatewaySet) synced() bool {
	return s.informerGen.synced() && (s.liveHTTP == nil || s.liveHTTP.synced())
}

// NewGateway builds the informers. routes says which version of each
// route kind (gateway.KindTCPRoute...) to watch: RouteV1, RouteV1Alpha2
// (older bundles; the objects are converted to v1, Compute sees one
// kind), or "" for a kind the cluster does not serve (not watched; see
// RouteVersions). Without udp, UDPRoutes are not watched either.
func NewGateway(client kubernetes.Interface, gc gwclient.Interface, udp bool, routes map[string]string) *Gateway {
	g := &Gateway{client: client, gc: gc, udpOn: udp, routes: routes}
	g.rebuild(g.build)
	return g
}

// build makes a new generation of the informers (not started).
func (g *Gateway) build() *gatewaySet {
	kf := informers.NewSharedInformerFactoryWithOptions(g.client, 0, informers.WithTransform(Slim))
	gf := gwinformers.NewSharedInformerFactoryWithOptions(kubeclient.PlainListsGateway(g.gc), 0, gwinformers.WithTransform(gatewayTransform))
	sf := informers.NewSharedInformerFactoryWithOptions(kubeclient.PlainLists(g.client), 0, informers.WithTransform(g.secretTransform))
	set := &gatewaySet{
		secrets:  sf.Core().V1().Secrets().Informer(),
		classes:  gf.Gateway().V1().GatewayClasses().Informer(),
		gateways: gf.Gateway().V1().Gateways().Informer(),
		grants:   gf.Gateway().V1beta1().ReferenceGrants().Informer(),
		services: kf.Core().V1().Services().Informer(),
		slices:   kf.Discovery().V1().EndpointSlices().Informer(),
		// The Namespaces list plainly: only the large kinds stream.
		namespaces: kf.InformerFor(&corev1.Namespace{}, func(c kubernetes.Interface, resync time.Duration) cache.SharedIndexInformer {
			return coreinformers.NewNamespaceInformer(kubeclient.PlainLists(c), resync, cache.Indexers{cache.NamespaceIndex: cache.MetaNamespaceIndexFunc})
		}),
	}
	v1, v1a2 := gf.Gateway().V1(), gf.Gateway().V1alpha2()
	switch g.routes[gateway.KindTCPRoute] {
	case RouteV1:
		set.tcp = v1.TCPRoutes().Informer()
	case RouteV1Alpha2:
		set.tcp = v1a2.TCPRoutes().Informer()
	}
	switch g.routes[gateway.KindTLSRoute] {
	case RouteV1:
		set.tls = v1.TLSRoutes().Informer()
	case RouteV1Alpha2:
		set.tls = v1a2.TLSRoutes().Informer()
	}
	if g.routes[gateway.KindHTTPRoute] == RouteV1 {
		set.http = v1.HTTPRoutes().Informer()
		set.liveHTTP = journaled(newLive[*gwv1.HTTPRoute](set.http))
	}
	if g.routes[gateway.KindGRPCRoute] == RouteV1 {
		set.grpc = v1.GRPCRoutes().Informer()
	}
	switch {
	case !g.udpOn:
	case g.routes[gateway.KindUDPRoute] == RouteV1:
		set.udp = v1.UDPRoutes().Informer()
	case g.routes[gateway.KindUDPRoute] == RouteV1Alpha2:
		set.udp = v1a2.UDPRoutes().Informer()
	}
	if g.dyn != nil {
		set.poolFactory = dynamicinformer.NewDynamicSharedInformerFactory(kubeclient.PlainListsDynamic(g.dyn), 0)
		set.pools = set.poolFactory.ForResource(pools.GVR).Informer()
	}
	set.starters = []interface{ Start(<-chan struct{}) }{kf, sf, gf}
	set.informers = []cache.SharedIndexInformer{set.classes, set.gateways, set.grants, set.services, set.slices, set.namespaces, set.secrets}
	for _, r := range []cache.SharedIndexInformer{set.tcp, set.tls, set.udp, set.http, set.grpc, set.pools} {
		if r != nil {
			set.informers = append(set.informers, r)
		}
	}
	if set.poolFactory != nil {
		set.starters = append(set.starters, set.poolFactory)
	}
	g.buildIngress(set)
	g.buildBackendTLS(set, gf)
	g.buildListenerSets(set, gf)
	if g.claimsOn {
		var cf informers.SharedInformerFactory
		cf, set.claims = claimsInformer(g.client)
		set.starters = append(set.starters, cf)
		set.informers = append(set.informers, set.claims)
	}
	return set
}

// gatewayTransform keeps the caches free of managedFields, the bulk of a
// small object, turns v1alpha2 routes into their v1 form, and shares the
// strings HTTP and gRPC routes repeat (intern.go).
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
		// Served: the spec whole; the status is the writer's (kept
		// for its comparisons, as for the other route kinds). Their
		// repeated strings shared (intern.go).
		internHTTPRoute(o)
		return o, nil
	case *gwv1.GRPCRoute:
		internGRPCRoute(o)
		return o, nil
	}
	return obj, nil
}

// Start runs the informers and waits until every cache has synced (a
// CRD that is not installed never syncs: the error names the wait). With
// RelistAfterOutage, a relist started while it waits counts too.
func (g *Gateway) Start(ctx context.Context, timeout time.Duration) error {
	if !g.startAndWait(ctx, timeout) {
		return fmt.Errorf("informer caches did not sync within %s (are the Gateway API v1.6 standard CRDs installed?)", timeout)
	}
	return nil
}

// Snapshot lists the cached objects, shared with the caches: callers
// must not modify them.
func (g *Gateway) Snapshot() gateway.Input { return g.snapshot(false) }

// SnapshotTold is Snapshot with the HTTPRoutes changed since the last
// SnapshotTold (Input.HTTPRouteChanges, from the HTTPRoutes' journal,
// taken with their list): for the gateway loop's passes alone (another
// caller's take would leave the loop's next span disjoint from its last
// pass: the memo then looks every route up).
func (g *Gateway) SnapshotTold() gateway.Input { return g.snapshot(true) }

func (g *Gateway) snapshot(told bool) gateway.Input {
	set := g.current()
	var http []*gwv1.HTTPRoute
	var changes *gateway.ChangedRoutes
	ok := false
	if told && set.liveHTTP != nil {
		http, changes, ok = set.liveHTTP.intoTold(nil)
	}
	if !ok {
		http = listOf[*gwv1.HTTPRoute](set.http)
	}
	gws := listOf[*gwv1.Gateway](set.gateways)
	in := gateway.Input{
		Classes:    listOf[*gwv1.GatewayClass](set.classes),
		Gateways:   gws,
		TCPRoutes:  listOf[*gwv1.TCPRoute](set.tcp),
		TLSRoutes:  listOf[*gwv1.TLSRoute](set.tls),
		UDPRoutes:  listOf[*gwv1.UDPRoute](set.udp),
		HTTPRoutes: http,
		GRPCRoutes: listOf[*gwv1.GRPCRoute](set.grpc),
		Secrets:    g.secretsFor(listOf[*gateway.Secret](set.secrets), gws),
		Grants:     listOf[*gwv1beta1.ReferenceGrant](set.grants),
		Services:   listOf[*corev1.Service](set.services),
		Slices:     listOf[*desired.Slice](set.slices),
		Namespaces: listOf[*corev1.Namespace](set.namespaces),
	}
	backendTLSInput(set, &in)     // gatewaybtls.go
	listenerSetInput(set, &in)    // gatewaylistenersets.go
	in.HTTPRouteChanges = changes // nil unless told from the journal
	return in
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
	set := g.current()
	switch kind {
	case "GatewayClass":
		inf = set.classes
	case "Gateway":
		inf = set.gateways
	case gateway.KindTCPRoute:
		inf = set.tcp
	case gateway.KindTLSRoute:
		inf = set.tls
	case gateway.KindUDPRoute:
		inf = set.udp
	case gateway.KindHTTPRoute:
		inf = set.http
	case gateway.KindGRPCRoute:
		inf = set.grpc
	case KindBackendTLSPolicy:
		inf = set.btls.policies
	}
	if ls, ok := listenerSetInformer(set, kind); ok {
		inf = ls
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
	g.dyn = dyn
	g.rebuild(g.build)
}

// Pools lists the cached AddressPools (none without WithPools), shared
// with the cache: not to be modified.
func (g *Gateway) Pools() []*unstructured.Unstructured {
	return listOf[*unstructured.Unstructured](g.current().pools)
}
