package controller

import (
	"cmp"
	"net/netip"
	"slices"

	corev1 "k8s.io/api/core/v1"

	"github.com/haproxy-k8s-sync/haproxy-k8s-sync/internal/desired"
	"github.com/haproxy-k8s-sync/haproxy-k8s-sync/internal/pools"
)

// allocation is one pass's outcome of the AddressPools.
type allocation struct {
	addrs    map[string][]netip.Addr
	problems []desired.Problem
	counts   map[string]pools.Counts
	errs     map[string]string // pool name: why its spec is unusable
}

// allocate hands out the Services' addresses from the cached
// AddressPools (pools.Allocate), oldest Service first, each keeping the
// addresses its status lists while they stay valid.
func (c *Controller) allocate(svcs []*corev1.Service) allocation {
	objs, nsLabels := c.src.Pools()
	out := allocation{errs: map[string]string{}}
	var ps []pools.Pool
	for _, o := range objs {
		ap, err := pools.FromUnstructured(o)
		if err == nil {
			var p pools.Pool
			if p, err = ap.Pool(); err == nil {
				ps = append(ps, p)
				continue
			}
		}
		out.errs[o.GetName()] = err.Error()
		if c.reported["pool/"+o.GetName()] != err.Error() {
			c.reported["pool/"+o.GetName()] = err.Error()
			c.log.Warn("AddressPool not usable", "pool", o.GetName(), "err", err)
		}
	}
	var sel []*corev1.Service
	for _, s := range svcs {
		if desired.Selected(s, c.opts.Desired) && s.Spec.Type == corev1.ServiceTypeLoadBalancer {
			sel = append(sel, s)
		}
	}
	slices.SortFunc(sel, func(a, b *corev1.Service) int {
		if x := a.CreationTimestamp.Time.Compare(b.CreationTimestamp.Time); x != 0 {
			return x
		}
		return cmp.Compare(a.Namespace+"/"+a.Name, b.Namespace+"/"+b.Name)
	})
	byKey := make(map[string]*corev1.Service, len(sel))
	reqs := make([]pools.Request, 0, len(sel))
	for _, s := range sel {
		r, err := pools.RequestFor(s, nsLabels[s.Namespace])
		if err != nil {
			out.problems = append(out.problems, desired.Problem{Service: s, Reason: desired.ReasonInvalidAnnotation,
				Message: err.Error() + "; the Service keeps the addresses it has"})
		}
		byKey[r.Key] = s
		reqs = append(reqs, r)
	}
	res := pools.Allocate(ps, reqs)
	for _, p := range res.Problems {
		out.problems = append(out.problems, desired.Problem{Service: byKey[p.Key], Reason: p.Reason, Message: p.Message})
	}
	out.addrs, out.counts = res.Assigned, res.Pools
	return out
}
