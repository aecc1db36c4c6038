package controller

import (
	"net/netip"
	"slices"

	corev1 "k8s.io/api/core/v1"
	networkingv1 "k8s.io/api/networking/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"

	"github.com/haproxy-k8s-sync/haproxy-k8s-sync/internal/claims"
	"github.com/haproxy-k8s-sync/haproxy-k8s-sync/internal/desired"
	"github.com/haproxy-k8s-sync/haproxy-k8s-sync/internal/pools"
)

// allocation is one pass's outcome of the AddressPools.
type allocation struct {
	addrs    map[string][]netip.Addr // in use: bound and published
	given    map[string][]netip.Addr // in use and being claimed (the next allocation's prev)
	wants    []claims.Want           // given, for the Claimer
	mine     map[types.UID]bool      // the Services whose claims this controller answers for
	fresh    bool                    // computed by this pass (not the last one reused)
	problems []desired.Problem
	counts   map[string]pools.Counts
	errs     map[string]string        // pool name: why its spec is unusable
	owned    func(netip.Addr) bool    // whether an address is in one of the pools
	ranges   map[string][]pools.Range // each pool's, by name (its status's announced addresses)
}

// allocate hands out the Services' addresses from the cached
// AddressPools (pools.Allocate), oldest Service first, each keeping the
// addresses its status lists while they stay valid.
func (c *Controller) allocate(svcs []*corev1.Service) allocation {
	objs, namespaces := c.src.Pools()
	gws := c.src.Gateways()
	cls := c.src.Claims()
	// Most passes change endpoints only: the same objects give the same
	// allocation (informers replace an object that changes).
	if c.allocInputs.same(svcs, objs, namespaces) && sameSet(c.allocInputs.gws, gws) && sameSet(c.allocInputs.claims, cls) {
		last := c.lastAlloc
		last.fresh = false
		return last
	}
	c.allocInputs.set(svcs, objs, namespaces)
	c.allocInputs.gws, c.allocInputs.claims = setOf(gws), setOf(cls)
	nsLabels := make(map[string]map[string]string, len(namespaces))
	for _, n := range namespaces {
		nsLabels[n.Name] = n.Labels
	}
	out := allocation{errs: map[string]string{}}
	var ps []pools.Pool
	for _, o := range objs {
		ap, err := pools.FromUnstructured(o)
		if err == nil {
			var p pools.Pool
			if p, err = ap.Pool(); err == nil {
				ps = append(ps, p)
				c.lastPools[p.Name] = p
				continue
			}
		}
		out.errs[o.GetName()] = err.Error()
		if last, ok := c.lastPools[o.GetName()]; ok {
			// Its addresses stay with their Services; it gives out none.
			last.Frozen = true
			ps = append(ps, last)
		}
		if c.reported["pool/"+o.GetName()] != err.Error() {
			c.reported["pool/"+o.GetName()] = err.Error()
			c.log.Warn("AddressPool not usable", "pool", o.GetName(), "err", err)
		}
	}
	for name := range c.lastPools {
		if !slices.ContainsFunc(objs, func(o *unstructured.Unstructured) bool { return o.GetName() == name }) {
			delete(c.lastPools, name) // deleted: its addresses go
		}
	}
	var claimed pools.Claims
	if c.opts.Claimer != nil {
		claimed = claims.ToPools(claims.ReadAll(cls))
	}
	selected := func(s *corev1.Service) bool { return desired.Selected(s, c.opts.Desired) }
	res, probs := pools.ForServicesWith(ps, svcs, nsLabels, selected, gatewayReservations(gws, nsLabels), c.lastAlloc.given, claimed)
	for _, p := range probs {
		out.problems = append(out.problems, desired.Problem{Service: p.Service, Reason: p.Reason, Message: p.Message})
	}
	out.addrs, out.counts, out.fresh = res.Assigned, res.Pools, true
	out.given, out.wants, out.mine = given(res, svcs, selected)
	out.owned = func(a netip.Addr) bool {
		return slices.ContainsFunc(ps, func(p pools.Pool) bool {
			return slices.ContainsFunc(p.Ranges, func(r pools.Range) bool { return r.Contains(a) })
		})
	}
	out.ranges = make(map[string][]pools.Range, len(ps))
	for _, p := range ps {
		out.ranges[p.Name] = p.Ranges
	}
	c.lastAlloc = out
	return out
}

// allocInputs are the objects an allocation was computed from, as sets
// (the informers list them in no particular order).
type allocInputs struct {
	svcs   map[*corev1.Service]struct{}
	pools  map[*unstructured.Unstructured]struct{}
	ns     map[*corev1.Namespace]struct{}
	gws    map[*unstructured.Unstructured]struct{} // Gateways (their addresses)
	claims map[*networkingv1.IPAddress]struct{}    // the address claims
}

func sameSet[T comparable](set map[T]struct{}, xs []T) bool {
	if set == nil || len(set) != len(xs) {
		return false
	}
	for _, x := range xs {
		if _, ok := set[x]; !ok {
			return false
		}
	}
	return true
}

func setOf[T comparable](xs []T) map[T]struct{} {
	m := make(map[T]struct{}, len(xs))
	for _, x := range xs {
		m[x] = struct{}{}
	}
	return m
}

func (a *allocInputs) same(svcs []*corev1.Service, pools []*unstructured.Unstructured, ns []*corev1.Namespace) bool {
	return sameSet(a.svcs, svcs) && sameSet(a.pools, pools) && sameSet(a.ns, ns)
}

func (a *allocInputs) set(svcs []*corev1.Service, pools []*unstructured.Unstructured, ns []*corev1.Namespace) {
	a.svcs, a.pools, a.ns = setOf(svcs), setOf(pools), setOf(ns)
}

// given is each selected Service's addresses, in use and being claimed
// (res.Assigned and res.Pending), and the same as the Claimer's wants;
// mine, the Services whose claims the Claimer answers for: the selected
// LoadBalancer Services, and every Service that is no LoadBalancer (no
// controller's), not those of another loadBalancerClass (another
// controller's, sharing the pools).
func given(res pools.Result, svcs []*corev1.Service, selected func(*corev1.Service) bool) (map[string][]netip.Addr, []claims.Want, map[types.UID]bool) {
	out := make(map[string][]netip.Addr, len(res.Assigned)+len(res.Pending))
	mine := make(map[types.UID]bool, len(svcs))
	var wants []claims.Want
	for _, s := range svcs {
		if s.Spec.Type != corev1.ServiceTypeLoadBalancer {
			mine[s.UID] = true
			continue
		}
		if !selected(s) {
			continue
		}
		mine[s.UID] = true
		k := s.Namespace + "/" + s.Name
		as := slices.Concat(res.Assigned[k], res.Pending[k])
		if len(as) == 0 {
			continue
		}
		out[k] = as
		for _, a := range as {
			wants = append(wants, claims.Want{Addr: a, ShareKey: s.Annotations[pools.SharedIPAnnotation],
				Parent: claims.Parent{Kind: claims.Service, Namespace: s.Namespace, Name: s.Name, UID: s.UID}})
		}
	}
	return out, wants, mine
}
