package controller

import (
	"net/netip"

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
	res, probs := pools.ForServices(ps, svcs, nsLabels, func(s *corev1.Service) bool { return desired.Selected(s, c.opts.Desired) })
	for _, p := range probs {
		out.problems = append(out.problems, desired.Problem{Service: p.Service, Reason: p.Reason, Message: p.Message})
	}
	out.addrs, out.counts = res.Assigned, res.Pools
	return out
}
