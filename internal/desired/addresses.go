package desired

import (
	"maps"
	"net/netip"
	"slices"

	corev1 "k8s.io/api/core/v1"

	"github.com/haproxy-k8s-sync/haproxy-k8s-sync/internal/model"
)

// Selected tells whether this controller takes the Service (its class,
// type and annotations), whatever else is wrong with it.
func Selected(s *corev1.Service, opts Options) bool { return selected(s, opts) }

// claim is what two Services may not both listen on: an address (zero
// for every address) and a port.
type claim struct {
	addr netip.Addr
	port int32
}

// bindsFor are the listen addresses of a Service's port: its own
// addresses from the pools (opts.Pooled; bound with transparent (IP_FREEBIND), so that an
// address that reaches the host later needs no reload), or --bind-address
// (none: every address).
func bindsFor(svc *corev1.Service, port int32, addrs []netip.Addr, opts Options) []model.Bind {
	var out []model.Bind
	if pooled(svc, opts) {
		for _, a := range addrs {
			out = append(out, model.Bind{Addr: a, Port: uint16(port), Transparent: true})
		}
		return out
	}
	if len(opts.Binds) == 0 {
		return []model.Bind{{Port: uint16(port)}}
	}
	for _, a := range opts.Binds {
		out = append(out, model.Bind{Addr: a, Port: uint16(port)})
	}
	return out
}

// pooled reports whether svc listens on its own addresses: with pools,
// the LoadBalancer Services (NodePort Services opted in, and the Service
// of single-Service mode when not a LoadBalancer, keep --bind-address).
func pooled(svc *corev1.Service, opts Options) bool {
	return opts.Pooled && svc.Spec.Type == corev1.ServiceTypeLoadBalancer
}

// taken returns the owner of the first of binds already claimed, or "".
func taken(claimed map[claim]string, binds []model.Bind) string {
	for _, b := range binds {
		if o, ok := claimed[claim{b.Addr, int32(b.Port)}]; ok {
			return o
		}
	}
	return ""
}

func claimAll(claimed map[claim]string, binds []model.Bind, key string) {
	for _, b := range binds {
		claimed[claim{b.Addr, int32(b.Port)}] = key
	}
}

// setAddresses tells the memo the pools' assignments of this pass: the
// entries of Services whose addresses changed are forgotten, and the
// next pass is a full one (the frontends change).
func (m *Memo) setAddresses(a map[string][]netip.Addr) {
	if m == nil {
		return
	}
	var changed map[string]bool
	mark := func(k string) {
		if changed == nil {
			changed = map[string]bool{}
		}
		changed[k] = true
	}
	for k, v := range a {
		if !slices.Equal(m.addrs[k], v) {
			mark(k)
		}
	}
	for k := range m.addrs {
		if _, ok := a[k]; !ok {
			mark(k)
		}
	}
	if changed == nil {
		return
	}
	m.addrs = maps.Clone(a) // the caller may change its map
	for svc := range m.entries {
		if changed[key(svc)] {
			m.drop(svc)
		}
	}
	m.services = nil // no reuse of the last pass's frontends
	m.last.valid = false
}
