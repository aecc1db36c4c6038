package controller

import (
	"net/netip"
	"slices"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
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
		if slices.Contains(p.addressesLocked(s), a) {
			out = append(out, s)
		}
	}
	return out
}

// published are the LoadBalancer Services of the last pass that have
// addresses published.
func (p *Publisher) published() []types.NamespacedName {
	p.mu.Lock()
	defer p.mu.Unlock()
	var out []types.NamespacedName
	for _, s := range p.last {
		if len(p.addressesLocked(s)) > 0 {
			out = append(out, types.NamespacedName{Namespace: s.Namespace, Name: s.Name})
		}
	}
	return out
}

// addressesOf are the addresses published for s (none when it is not a
// LoadBalancer Service).
func (p *Publisher) addressesOf(s *corev1.Service) []netip.Addr {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.addressesLocked(s)
}

func (p *Publisher) addressesLocked(s *corev1.Service) []netip.Addr {
	if s.Spec.Type != corev1.ServiceTypeLoadBalancer {
		return nil
	}
	if p.opts.Pooled {
		return p.addrs[s.Namespace+"/"+s.Name]
	}
	return p.opts.Addresses
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
