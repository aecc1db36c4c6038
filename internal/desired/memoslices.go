package desired

import (
	"slices"

	corev1 "k8s.io/api/core/v1"
)

// The memo's EndpointSlices by Service, kept from pass to pass by
// looking only at the slices that came or went (Memo.slicesByService),
// and which Services each tracked entry reads.

type sliceRef struct {
	key  string // "namespace/service", or "" for a slice of no Service
	pass uint64
}

// slicesByService is slicesByService(in), maintained incrementally. The
// order of a Service's slices may differ from in's, which does not change
// the servers computed from them.
func (m *Memo) slicesByService(in []*Slice) map[string][]*Slice {
	if m == nil {
		return slicesByService(in)
	}
	if m.sliceKeys == nil {
		m.sliceKeys = make(map[*Slice]*sliceRef, len(in))
		m.bySvc = make(map[string][]*Slice, len(in))
	}
	for _, s := range in {
		if r, ok := m.sliceKeys[s]; ok {
			r.pass = m.pass
			continue
		}
		r := &sliceRef{pass: m.pass}
		if s.Service != "" {
			r.key = s.Namespace + "/" + s.Service
			m.bySvc[r.key] = append(slices.Clip(m.bySvc[r.key]), s)
			m.markDirty(r.key)
		}
		m.sliceKeys[s] = r
	}
	if len(m.sliceKeys) > len(in) {
		for s, r := range m.sliceKeys {
			if r.pass == m.pass {
				continue
			}
			delete(m.sliceKeys, s)
			if r.key == "" {
				continue
			}
			m.markDirty(r.key)
			rest := slices.DeleteFunc(slices.Clone(m.bySvc[r.key]), func(x *Slice) bool { return x == s })
			if len(rest) == 0 {
				delete(m.bySvc, r.key)
			} else {
				m.bySvc[r.key] = rest
			}
		}
	}
	return m.bySvc
}

// track records which nodes the servers of e, just computed, depend on.
func (m *Memo) track(e *memoEntry, svc *corev1.Service, eps []*Slice) {
	if m == nil {
		return
	}
	nodes := m.scratch[:0]
	switch {
	case podTargets(svc, m.opts):
	case svc.Spec.ExternalTrafficPolicy != corev1.ServiceExternalTrafficPolicyLocal:
		nodes = append(nodes, "") // every eligible node serves
	default:
		for _, sl := range eps {
			for _, ep := range sl.Endpoints {
				if ep.Node != "" && !slices.Contains(nodes, ep.Node) {
					nodes = append(nodes, ep.Node)
				}
			}
		}
	}
	m.scratch = nodes
	if slices.Equal(nodes, e.nodes) {
		// Already indexed so (the usual case when a node changed: the
		// endpoints still run where they ran).
		return
	}
	e.nodes = append(e.nodes[:0], nodes...)
}

func (e *memoEntry) forgetServers() {
	e.tracked = false
	for i := range e.ports {
		e.ports[i].haveServers = false
		e.ports[i].servers = nil
	}
}
