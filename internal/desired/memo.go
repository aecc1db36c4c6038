package desired

import (
	"net/netip"
	"slices"

	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"

	"github.com/haproxy-k8s-sync/haproxy-k8s-sync/internal/model"
	"github.com/haproxy-k8s-sync/haproxy-k8s-sync/internal/settings"
)

// Memo carries per-Service work from one Compute to the next, so that a pass
// after a small change redoes only the Services it touches. Compute gives
// the same Result with or without a Memo; the caller owns it and passes it
// in Input.Memo on every pass. It is not safe for concurrent use.
//
// It relies on informer semantics: an object that changes is replaced by a
// new one, never modified in place. An entry is keyed by the Service object
// and remembers the EndpointSlice objects it was computed from; it is
// reused only while the Service object is the same, its slices are the same
// objects and no node it depends on changed (address or eligibility).
// Services whose annotations are invalid are never memoised.
type Memo struct {
	opts    Options
	hasOpts bool
	pass    uint64
	nodes   map[string]netip.Addr // eligible nodes of the last pass
	entries map[*corev1.Service]*memoEntry
}

type memoEntry struct {
	pass   uint64 // last pass that saw the Service
	ready  bool   // set and ports hold results
	set    settings.Settings
	slices []*discoveryv1.EndpointSlice
	ports  []memoPort // by index in Spec.Ports
}

type memoPort struct {
	haveServers bool
	servers     []model.Server
	ok          bool
	haveProxies bool
	fe          model.Frontend
	be          model.Backend // without servers
}

func sameOptions(a, b Options) bool {
	return a.Class == b.Class && a.ClassLess == b.ClassLess && a.Service == b.Service && a.Backend == b.Backend &&
		a.Targets == b.Targets && a.Defaults == b.Defaults && slices.Equal(a.Binds, b.Binds)
}

// begin starts a pass: it forgets everything if the options changed and
// returns the nodes whose eligibility or address changed since the last one.
func (m *Memo) begin(opts Options, nodes map[string]netip.Addr) (changed map[string]bool) {
	if m == nil {
		return nil
	}
	if !m.hasOpts || !sameOptions(m.opts, opts) {
		m.opts, m.hasOpts = opts, true
		m.entries = nil
		m.nodes = nil
	}
	if m.entries == nil {
		m.entries = make(map[*corev1.Service]*memoEntry)
	}
	m.pass++
	for name, a := range nodes {
		if old, ok := m.nodes[name]; !ok || old != a {
			if changed == nil {
				changed = make(map[string]bool)
			}
			changed[name] = true
		}
	}
	for name := range m.nodes {
		if _, ok := nodes[name]; !ok {
			if changed == nil {
				changed = make(map[string]bool)
			}
			changed[name] = true
		}
	}
	m.nodes = nodes
	return changed
}

// end drops the entries of Services the pass did not see.
func (m *Memo) end() {
	if m == nil {
		return
	}
	for svc, e := range m.entries {
		if e.pass != m.pass {
			delete(m.entries, svc)
		}
	}
}

// entry returns the Service's entry, with its servers forgotten if they may
// have changed; nil without a Memo.
func (m *Memo) entry(svc *corev1.Service, eps []*discoveryv1.EndpointSlice, changed map[string]bool) *memoEntry {
	if m == nil {
		return nil
	}
	e := m.entries[svc]
	if e == nil {
		e = &memoEntry{}
		m.entries[svc] = e
	}
	e.pass = m.pass
	if e.ready && (!slices.Equal(e.slices, eps) || m.dependsOn(svc, eps, changed)) {
		for i := range e.ports {
			e.ports[i].haveServers = false
			e.ports[i].servers = nil
		}
	}
	e.slices = append(e.slices[:0], eps...)
	return e
}

// drop forgets a Service (its annotations are invalid).
func (m *Memo) drop(svc *corev1.Service) {
	if m != nil {
		delete(m.entries, svc)
	}
}

// dependsOn reports whether the servers of svc may depend on a changed node.
func (m *Memo) dependsOn(svc *corev1.Service, eps []*discoveryv1.EndpointSlice, changed map[string]bool) bool {
	if len(changed) == 0 || m.opts.Targets == TargetPods {
		return false
	}
	if svc.Spec.ExternalTrafficPolicy != corev1.ServiceExternalTrafficPolicyLocal {
		return true // every eligible node serves
	}
	for _, sl := range eps {
		for _, e := range sl.Endpoints {
			if e.NodeName != nil && changed[*e.NodeName] {
				return true
			}
		}
	}
	return false
}

func (e *memoEntry) init(set settings.Settings, ports int) {
	e.ready, e.set = true, set
	e.ports = make([]memoPort, ports)
}
