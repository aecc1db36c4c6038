// Package claims makes sure no LoadBalancer address of the AddressPools is
// ever published to two objects, though the Services mode and the gateway
// mode allocate from the same pools in separate processes. Before an
// address goes to an object's status (or to HAProxy), it is claimed: a
// networking.k8s.io/v1 IPAddress named by the address is created for the
// object, the way the kube-apiserver allocates ClusterIPs. The apiserver
// creates one object per name, atomically, so of two controllers giving
// one free address to their own new object at the same moment, one
// creates the claim and the other gets AlreadyExists; its next pass sees
// the claim and gives its object another address, which it never
// published. A claim is deleted when its object no longer has the address
// (asks for another), and when its object is gone (deleted) by either
// controller: at once when its caches saw the object go, else once a
// consistent read of the apiserver finds no such object (its cache may be
// behind a newer object's claim).
//
// The IPAddresses carry the label ipaddress.kubernetes.io/managed-by:
// haproxy-k8s-sync.io (the apiserver's own repair loop leaves IPAddresses
// of other managers alone), their parentRef names the object (services,
// or gateways.gateway.networking.k8s.io), an annotation its UID (an
// object deleted and created again under its name is another object) and
// another its allow-shared-ip key. PlanFor is pure; Claimer writes.
package claims

import (
	"cmp"
	"net/netip"
	"slices"
	"time"

	networkingv1 "k8s.io/api/networking/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/haproxy-k8s-sync/haproxy-k8s-sync/internal/pools"
)

const (
	// ManagedBy is the value of networkingv1.LabelManagedBy on our claims.
	ManagedBy = "haproxy-k8s-sync.io"
	// ParentUIDAnnotation holds the UID of the claim's object.
	ParentUIDAnnotation = "haproxy-k8s-sync.io/parent-uid"
	// ShareAnnotation holds the object's allow-shared-ip key, if any.
	ShareAnnotation = "haproxy-k8s-sync.io/allow-shared-ip"
)

// Selector selects our claims among the cluster's IPAddresses.
var Selector = networkingv1.LabelManagedBy + "=" + ManagedBy

// Kind is the kind of object an address is claimed for.
type Kind string

// The kinds that hold addresses of the pools.
const (
	Service Kind = "Service"
	Gateway Kind = "Gateway"
	// IngressClass: the address of every Ingress of an IngressClass of
	// ours that names a pool (cluster-scoped: no namespace).
	IngressClass Kind = "IngressClass"
)

const (
	gatewayGroup    = "gateway.networking.k8s.io"
	networkingGroup = "networking.k8s.io"
)

// Parent is the object an address is claimed for.
type Parent struct {
	Kind            Kind
	Namespace, Name string
	UID             types.UID
}

// Key is the parent's key in the allocation (pools.Request.Key).
func (p Parent) Key() string {
	switch p.Kind {
	case Gateway:
		return pools.GatewayKey(p.Namespace, p.Name)
	case IngressClass:
		return pools.IngressClassKey(p.Name)
	}
	return p.Namespace + "/" + p.Name
}

// Claim is one claimed address.
type Claim struct {
	Addr     netip.Addr
	Parent   Parent
	ShareKey string
	UID      types.UID // the IPAddress's own, for a delete's precondition
	Created  time.Time
}

// Want is one address a controller's last allocation gives one of its
// own objects (every one, usable or pending: pools.Result).
type Want struct {
	Addr     netip.Addr
	Parent   Parent
	ShareKey string
}

// Read reads one of our claims; false for an IPAddress that is not ours
// or not readable as one (left alone).
func Read(ip *networkingv1.IPAddress) (Claim, bool) {
	if ip.Labels[networkingv1.LabelManagedBy] != ManagedBy || ip.Spec.ParentRef == nil {
		return Claim{}, false
	}
	a, err := netip.ParseAddr(ip.Name)
	if err != nil {
		return Claim{}, false
	}
	ref := ip.Spec.ParentRef
	var k Kind
	switch {
	case ref.Group == "" && ref.Resource == "services":
		k = Service
	case ref.Group == gatewayGroup && ref.Resource == "gateways":
		k = Gateway
	case ref.Group == networkingGroup && ref.Resource == "ingressclasses":
		k = IngressClass
	default:
		return Claim{}, false
	}
	return Claim{Addr: a, Parent: Parent{Kind: k, Namespace: ref.Namespace, Name: ref.Name, UID: types.UID(ip.Annotations[ParentUIDAnnotation])},
		ShareKey: ip.Annotations[ShareAnnotation], UID: ip.UID, Created: ip.CreationTimestamp.Time}, true
}

// IPAddress is the object that makes claim c.
func (c Claim) IPAddress() *networkingv1.IPAddress {
	family := "IPv4"
	if c.Addr.Is6() {
		family = "IPv6"
	}
	ref := &networkingv1.ParentReference{Resource: "services", Namespace: c.Parent.Namespace, Name: c.Parent.Name}
	switch c.Parent.Kind {
	case Gateway:
		ref.Group, ref.Resource = gatewayGroup, "gateways"
	case IngressClass:
		ref.Group, ref.Resource, ref.Namespace = networkingGroup, "ingressclasses", ""
	}
	ann := map[string]string{ParentUIDAnnotation: string(c.Parent.UID)}
	if c.ShareKey != "" {
		ann[ShareAnnotation] = c.ShareKey
	}
	return &networkingv1.IPAddress{
		ObjectMeta: metav1.ObjectMeta{Name: c.Addr.String(), Annotations: ann,
			Labels: map[string]string{networkingv1.LabelManagedBy: ManagedBy, networkingv1.LabelIPAddressFamily: family}},
		Spec: networkingv1.IPAddressSpec{ParentRef: ref},
	}
}

// ReadAll reads our claims among ips (Read), in their order.
func ReadAll(ips []*networkingv1.IPAddress) []Claim {
	cs := make([]Claim, 0, len(ips))
	for _, ip := range ips {
		if c, ok := Read(ip); ok {
			cs = append(cs, c)
		}
	}
	return cs
}

// ToPools is what the allocation needs of the claims.
func ToPools(cs []Claim) pools.Claims {
	out := make(pools.Claims, len(cs))
	for _, c := range cs {
		out[c.Addr] = pools.Holder{Key: c.Parent.Key(), ShareKey: c.ShareKey}
	}
	return out
}

// Existence is whether a claim's object exists, as a controller's synced
// caches see it.
type Existence int

const (
	// Unknown: the controller does not watch that kind.
	Unknown Existence = iota
	// Exists: an object of that name and UID is in the cache.
	Exists
	// Gone: none of that name, or one with another UID.
	Gone
)

// Plan is what a controller does about the claims.
type Plan struct {
	Create []Claim // IPAddresses to create
	Delete []Claim // to delete (precondition: their UID)
	// Verify: claims whose object the caches do not hold and never
	// held: deleted if a consistent read finds the object gone.
	Verify []Claim
}

// PlanFor plans a controller's claims from what its last allocation gives
// its objects (want), the objects it answers for (mine, by UID: those it
// allocates for, and those nobody does, e.g. a Service that is no
// LoadBalancer any more; not another controller's, e.g. a Service of
// another loadBalancerClass) and the claims in its synced cache (have):
//   - an address wanted and not claimed is claimed for the wanting
//     object (the first by key, when several share it);
//   - a claim whose object is one of mine and exists but no longer has
//     the address is deleted;
//   - a claim of any kind whose object is gone (by name and UID) is
//     deleted if the object was seen before (seen: UIDs of objects the
//     caches held; a UID is never reused, so the object was deleted),
//     else verified (the object may be newer than the caches: the claim
//     was made from another replica's or controller's cache, and every
//     object exists before its claim).
//
// An address wanted but claimed by another is left alone: the next
// allocation sees the claim and moves the object.
func PlanFor(want []Want, mine map[types.UID]bool, have []Claim, exists func(Parent) Existence, seen map[types.UID]bool) Plan {
	claimed := make(map[netip.Addr]bool, len(have))
	for _, c := range have {
		claimed[c.Addr] = true
	}
	wanted := make(map[Want]bool, len(want))
	sorted := slices.Clone(want)
	slices.SortFunc(sorted, func(a, b Want) int {
		if c := a.Addr.Compare(b.Addr); c != 0 {
			return c
		}
		return cmp.Compare(a.Parent.Key(), b.Parent.Key())
	})
	var p Plan
	for _, w := range sorted {
		wanted[Want{Addr: w.Addr, Parent: w.Parent}] = true
		if !claimed[w.Addr] {
			claimed[w.Addr] = true
			p.Create = append(p.Create, Claim{Addr: w.Addr, Parent: w.Parent, ShareKey: w.ShareKey})
		}
	}
	for _, c := range have {
		switch ex := exists(c.Parent); {
		case ex == Gone && seen[c.Parent.UID]:
			p.Delete = append(p.Delete, c)
		case ex == Gone:
			p.Verify = append(p.Verify, c)
		case ex == Exists && mine[c.Parent.UID] && !wanted[Want{Addr: c.Addr, Parent: c.Parent}]:
			p.Delete = append(p.Delete, c)
		}
	}
	byAddr := func(a, b Claim) int { return a.Addr.Compare(b.Addr) }
	slices.SortFunc(p.Delete, byAddr)
	slices.SortFunc(p.Verify, byAddr)
	return p
}
