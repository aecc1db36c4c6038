package controller

import (
	"net/netip"
	"slices"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/client-go/tools/record"

	"github.com/haproxy-k8s-sync/haproxy-k8s-sync/internal/announce"
)

// ReasonAddressMoved is the reason of the Event a Service gets when who
// announces one of its addresses changes (announce.Move).
const ReasonAddressMoved = "AddressMoved"

// ServicesWith are the Services the Publisher publishes a for, as of the
// last pass: those given a by the pools, or, without pools, every
// LoadBalancer Service served when a is a published address.
func (p *Publisher) ServicesWith(a netip.Addr) []*corev1.Service {
	if p == nil {
		return nil
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	var out []*corev1.Service
	for _, s := range p.last {
		if s.Spec.Type != corev1.ServiceTypeLoadBalancer {
			continue
		}
		mine := p.opts.Addresses
		if p.opts.Pooled {
			mine = p.addrs[s.Namespace+"/"+s.Name]
		}
		if slices.Contains(mine, a) {
			out = append(out, s)
		}
	}
	return out
}

// MoveEvents is an announce.MoveFunc: a Normal Event on each Service of
// the moved address (rec decides who emits: the leader, with
// --leader-elect).
func MoveEvents(p *Publisher, rec record.EventRecorder) announce.MoveFunc {
	return func(m announce.Move) {
		if rec == nil {
			return
		}
		for _, s := range p.ServicesWith(m.Addr) {
			rec.Event(s, corev1.EventTypeNormal, ReasonAddressMoved, m.Message())
		}
	}
}
