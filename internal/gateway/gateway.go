// Package gateway is the Gateway API source's pure part: GatewayClasses,
// Gateways, TCPRoutes, TLSRoutes and UDPRoutes (gateway.networking.k8s.io),
// ReferenceGrants, Services and their EndpointSlices in, the same model
// the drivers apply (model.Config) and the status every object should
// carry out. Compute reads nothing else and changes nothing it is given.
//
// A Gateway's TCP and TLS listeners on one port are one HAProxy frontend:
// a TCP listener sends every connection to its route's backends, TLS
// (passthrough) listeners choose the route by the ClientHello's server
// name. UDP listeners are ports of the nftables table. A route's
// backendRefs are Services; their servers are the ready endpoints'
// Pod IP:targetPort, shared between routes as one backend per Service
// port.
package gateway

import (
	"cmp"
	"net/netip"
	"slices"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	gwv1 "sigs.k8s.io/gateway-api/apis/v1"
	gwv1beta1 "sigs.k8s.io/gateway-api/apis/v1beta1"

	"github.com/haproxy-k8s-sync/haproxy-k8s-sync/internal/desired"
	"github.com/haproxy-k8s-sync/haproxy-k8s-sync/internal/model"
	"github.com/haproxy-k8s-sync/haproxy-k8s-sync/internal/pools"
)

// ControllerName is the GatewayClass controllerName this controller
// serves by default.
const ControllerName = "haproxy-k8s-sync.io/gateway"

// Input is everything Compute reads. Objects are shared with the
// informer caches: never modified.
type Input struct {
	Classes    []*gwv1.GatewayClass
	Gateways   []*gwv1.Gateway
	TCPRoutes  []*gwv1.TCPRoute
	TLSRoutes  []*gwv1.TLSRoute
	UDPRoutes  []*gwv1.UDPRoute
	HTTPRoutes []*gwv1.HTTPRoute // served on HTTP listeners (httproute.go)
	GRPCRoutes []*gwv1.GRPCRoute // served on HTTP listeners too (grpcroute.go)
	Secrets    []*Secret         // what HTTPS listeners' certificateRefs name
	Grants     []*gwv1beta1.ReferenceGrant
	Services   []*corev1.Service
	Slices     []*desired.Slice
	Namespaces []*corev1.Namespace // for allowedRoutes.namespaces.selector
	// BackendTLSPolicies and the ConfigMaps holding their CA bundles
	// (only their ca.crt is read: backendtls.go).
	BackendTLSPolicies []*gwv1.BackendTLSPolicy
	ConfigMaps         []*corev1.ConfigMap
	// ListenerSets add listener entries to the Gateways they name
	// (listenerset.go).
	ListenerSets []*gwv1.ListenerSet
	// HTTPRouteChanges: the HTTPRoutes changed since the last snapshot
	// so told, a journal's span taken with HTTPRoutes (routechanges.go),
	// read with Options.Memo; nil: every HTTPRoute is looked up.
	HTTPRouteChanges *ChangedRoutes
}

// Options shape Compute.
type Options struct {
	ControllerName string // GatewayClasses with this controllerName are ours; "": ControllerName
	// Addresses are the load balancer's addresses: listeners bind to
	// them (every local address when empty) and a Gateway's
	// spec.addresses may only name them. They go to status.addresses.
	Addresses []netip.Addr
	// Pooled: each Gateway gets its own addresses from Pools (run
	// --address-pools; Addresses are then not used), bound transparent,
	// shared with the LoadBalancer Services' (docs/addresses.md).
	Pooled bool
	Pools  []pools.Pool
	// Previous are the addresses the last pass gave (Result.Assigned):
	// a Gateway keeps them until its status lists them, so an address
	// given a moment ago does not move to an older Gateway that appears
	// meanwhile (objects created within a second are ordered by name).
	Previous map[Key][]netip.Addr
	// Claims are the address claims (internal/claims), with Pooled where
	// they are made (nil: none are): a Gateway is served on an address
	// only once it is claimed for it or its status lists it.
	Claims pools.Claims
	// Others are requests of objects served beside the Gateways (an
	// IngressClass naming a pool: ingressctl), allocated with them, in
	// the same age order; what each got is Result.Others. Their Current
	// holds what they had (the last pass's, their claims).
	Others []pools.Request
	// UDP: UDP listeners are served (the nftables driver runs); without
	// it they are not accepted.
	UDP bool
	// Certs keeps HTTPS listeners' last valid certificates across passes
	// (tls.go); nil: a Secret that turns bad serves nothing.
	Certs *CertMemo
	// Routes keeps GRPCRoutes' last valid rules across passes
	// (routememo.go); nil: a route that turns bad serves nothing.
	Routes *RouteMemo
	// CAs keeps BackendTLSPolicies' last good settings (backendtls.go);
	// nil: a policy that turns bad refuses its backends.
	CAs *CAMemo
	// Memo keeps each route's compiled rules across passes (memo.go);
	// nil: every pass compiles every route.
	Memo *Memo
}

// Result is the model and the status of every object that is ours.
type Result struct {
	Config   model.Config
	Classes  map[string]gwv1.GatewayClassStatus // by name
	Gateways map[Key]gwv1.GatewayStatus
	// Routes: the parents' statuses this controller writes, by route
	// (other controllers' entries are left alone by the writer); kept
	// from the last result where unchanged (routestatuses.go).
	Routes RouteStatuses
	// Policies: the BackendTLSPolicies' statuses (backendtls.go), by
	// policy; one ancestor per Gateway whose routes use a target.
	Policies map[Key]gwv1.PolicyStatus
	// ListenerSets: the statuses of the ListenerSets naming a Gateway of
	// ours (listenerset.go), by ListenerSet.
	ListenerSets map[Key]gwv1.ListenerSetStatus
	// Assigned are the Gateways' addresses from the pools (Pooled), for
	// the next pass's Options.Previous and for the claims: those in use
	// and those being claimed.
	Assigned map[Key][]netip.Addr
	// Others: what the pools gave each of Options.Others, by key.
	Others map[string]Given
	// Pass and RoutesChanged, with a Memo (routesdelta.go): the memo's
	// pass that made this result, and the routes whose entry in Routes
	// may differ from the result of the pass before (Pass-1): a new or
	// another slice, an entry gone, a route's object new, or a route of
	// a kind the memo does not keep. Every other route's entry is the
	// very slice of that result, its object the same. Pass 0: unknown.
	Pass          int
	RoutesChanged []RouteKey
	// Generations the statuses were computed from (observedGeneration
	// is in the conditions; this keys the writer's comparisons).
}

// Key names a namespaced object.
type Key struct{ Namespace, Name string }

func (k Key) String() string { return k.Namespace + "/" + k.Name }

// Route kinds.
const (
	KindTCPRoute = "TCPRoute"
	KindTLSRoute = "TLSRoute"
	KindUDPRoute = "UDPRoute"
)

// RouteKey names a route of some kind.
type RouteKey struct {
	Kind string
	Key
}

// route is what Compute reads of any route kind.
type route struct {
	key       RouteKey
	meta      *metav1.ObjectMeta // the object's own (not a copy: thousands are kept)
	parents   []gwv1.ParentReference
	hostnames []gwv1.Hostname // TLSRoute, HTTPRoute and GRPCRoute only
	refs      []gwv1.BackendRef
	http      *gwv1.HTTPRoute // an HTTPRoute's rules (httproute.go), a GRPCRoute's as HTTP (grpcroute.go)
	invalid   string          // why the route cannot be served ("": it can)
	kept      bool            // invalid, but its last valid rules are served (routememo.go)
	snis      []listenerSNIs  // routeSNIs by listener hostname, kept with Memo (memo.go)
	ks        string          // key.String(), made once
	e         *routeEntry     // its memo entry (memo.go)
	rank      ranked          // its place in the last pass's order (ordermemo.go)
	made      int             // the memo's pass that made it (routesdelta.go)
	seen      int             // the memo's last pass that saw its object (memo.go: forgotten after a pass without)
	told      int             // the memo's last pass told its object changed (routechanges.go)
	tab       tabMarks        // its places in a table's update (tablestamps.go)
	// sts: its parents' status in pass stsPass (routesdelta.go).
	sts     []gwv1.RouteParentStatus
	stsPass int
}

// routesOf is every route of in, oldest first; out holds the
// HTTPRoutes' (httpRoutes), in any order.
func routesOf(in Input, out []*route, memo *RouteMemo, m *Memo) []*route {
	for _, r := range in.TCPRoutes {
		rt := &route{key: RouteKey{KindTCPRoute, Key{r.Namespace, r.Name}}, meta: &r.ObjectMeta, parents: r.Spec.ParentRefs}
		if len(r.Spec.Rules) > 0 {
			rt.refs = r.Spec.Rules[0].BackendRefs
		}
		out = append(out, rt)
	}
	for _, r := range in.TLSRoutes {
		rt := &route{key: RouteKey{KindTLSRoute, Key{r.Namespace, r.Name}}, meta: &r.ObjectMeta, parents: r.Spec.ParentRefs, hostnames: r.Spec.Hostnames}
		if len(r.Spec.Rules) > 0 {
			rt.refs = r.Spec.Rules[0].BackendRefs
		}
		out = append(out, rt)
	}
	for _, r := range in.UDPRoutes {
		rt := &route{key: RouteKey{KindUDPRoute, Key{r.Namespace, r.Name}}, meta: &r.ObjectMeta, parents: r.Spec.ParentRefs}
		if len(r.Spec.Rules) > 0 {
			rt.refs = r.Spec.Rules[0].BackendRefs
		}
		out = append(out, rt)
	}
	out = append(out, grpcRoutes(in, memo)...)
	// The oldest route wins what two routes want (a TCP listener, a
	// server name); ties by kind, namespace and name, as the spec says.
	// Each key's string made once, not per comparison (routes created
	// within a second tie on their time, and thousands do).
	type keyed struct {
		r *route
		k string
	}
	for _, r := range out {
		if r.ks == "" {
			r.ks = r.key.String()
		}
	}
	if m != nil {
		m.order.sorted(out) // ordermemo.go: the last pass's order, kept
		return out
	}
	ks := make([]keyed, len(out))
	for i, r := range out {
		ks[i] = keyed{r, r.ks}
	}
	slices.SortFunc(ks, func(a, b keyed) int { return older(a.r.meta, b.r.meta, a.k, b.k) })
	for i := range ks {
		out[i] = ks[i].r
	}
	return out
}

func (k RouteKey) String() string { return k.Kind + "/" + k.Key.String() }

func older(a, b *metav1.ObjectMeta, ka, kb string) int {
	if c := a.CreationTimestamp.Compare(b.CreationTimestamp.Time); c != 0 {
		return c
	}
	return cmp.Compare(ka, kb)
}

// routesBuf is an empty list with the room of the last pass's (nil
// without a memo).
func (m *Memo) routesBuf() []*route {
	if m == nil {
		return nil
	}
	return m.rs[:0]
}

// keepRoutesBuf keeps rs's array for the next pass, holding no route.
func (m *Memo) keepRoutesBuf(rs []*route) {
	if m == nil {
		return
	}
	clear(rs)
	m.rs = rs[:0]
}
