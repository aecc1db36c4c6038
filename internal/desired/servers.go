package desired

import (
	"net/netip"
	"slices"

	corev1 "k8s.io/api/core/v1"

	"github.com/haproxy-k8s-sync/haproxy-k8s-sync/internal/model"
	"github.com/haproxy-k8s-sync/haproxy-k8s-sync/internal/settings"
)

// nodeInfo is what the servers of a node need: its InternalIP and whether it
// may serve (eligible: see nodeAddrs).
type nodeInfo struct {
	addr  netip.Addr // the InternalIP, IPv4 preferred
	addr6 netip.Addr // an IPv6 InternalIP, for Services of that family
	up    bool
}

// nodeAddrs maps each node with an InternalIP to it (preferring IPv4) and
// to whether it is eligible: not excluded (ExcludeLabel) and Ready. When
// no node that is not excluded is Ready, every one of them is eligible
// (fail open, as cloud load balancers do when every target is unhealthy):
// all nodes NotReady at once says more about the control plane (the
// node-lifecycle controller after an etcd or apiserver outage longer than
// its grace period) than about the nodes, and emptying every backend
// would fail every connection; HAProxy's own health checks still take a
// node that does not answer out. kept lists those nodes (sorted), nil
// when at least one node is Ready. An excluded node stays out: its
// exclusion is the operator's word, not a guess.
func nodeAddrs(nodes []*corev1.Node) (out map[string]nodeInfo, kept []string) {
	out = make(map[string]nodeInfo, len(nodes))
	anyReady := false
	for _, n := range nodes {
		_, excluded := n.Labels[ExcludeLabel]
		ready := nodeReady(n)
		var best, v6 netip.Addr
		for _, a := range n.Status.Addresses {
			if a.Type != corev1.NodeInternalIP {
				continue
			}
			ip, why := badAddress(a.Address) // Result.Skipped names it
			if why != "" {
				continue
			}
			if !best.IsValid() || (ip.Is4() && !best.Is4()) {
				best = ip.Unmap()
			}
			if ip.Is6() && !ip.Is4In6() && !v6.IsValid() {
				v6 = ip
			}
		}
		if !best.IsValid() {
			continue
		}
		out[n.Name] = nodeInfo{best, v6, !excluded && ready}
		if excluded {
			continue
		}
		if ready {
			anyReady = true
		} else {
			kept = append(kept, n.Name)
		}
	}
	if anyReady {
		return out, nil
	}
	for _, name := range kept {
		n := out[name]
		n.up = true
		out[name] = n
	}
	slices.Sort(kept)
	return out, kept
}

func nodeReady(n *corev1.Node) bool {
	for _, c := range n.Status.Conditions {
		if c.Type == corev1.NodeReady {
			return c.Status == corev1.ConditionTrue
		}
	}
	return false
}

func slicesByService(in []*Slice) map[string][]*Slice {
	out := make(map[string][]*Slice)
	for _, s := range in {
		if s.Service == "" {
			continue
		}
		k := s.Namespace + "/" + s.Service
		out[k] = append(out[k], s)
	}
	return out
}

// nodesBackend is the model.NodesBackend for these nodes: a server per
// node address, in maintenance while the node is not eligible, checked
// with check. It reuses last when that has the same servers.
func nodesBackend(nodes map[string]nodeInfo, last []model.Server, check model.Check) model.Backend {
	servers := make([]model.Server, 0, len(nodes))
	for _, n := range nodes {
		servers = append(servers, model.Server{Addr: n.addr, Maint: !n.up})
	}
	servers = sorted(servers)
	if slices.Equal(servers, last) {
		servers = last
	}
	return model.Backend{Name: model.NodesBackend, Servers: servers, Check: check}
}

// serversFor lists the servers of one Service port. ok is false when the
// port cannot be reached (no nodePort in node mode and no override).
func serversFor(svc *corev1.Service, p corev1.ServicePort, set settings.Settings, opts Options,
	nodes map[string]nodeInfo, eps []*Slice, fam family) ([]model.Server, bool) {
	// Deduplicated by sorted(); sized once for the most servers a branch
	// below can add (an endpoint or a node each, usually all of them):
	// appended from nil, each backend's servers grew by doubling and kept
	// the room until the backend changed.
	var best []model.Server
	add := func(a netip.Addr, port uint16, st EndpointState) {
		if st != epGone {
			best = append(best, model.Server{Addr: a, Port: port, Drain: st == epDrain})
		}
	}
	if podTargets(svc, opts) {
		best = make([]model.Server, 0, CountEndpoints(eps))
		for _, sl := range eps {
			port, found := slicePort(sl, p)
			if set.BackendPort != 0 {
				port, found = set.BackendPort, true
			}
			if !found || sl.FQDN {
				continue
			}
			for _, e := range sl.Endpoints {
				if e.Addr.IsValid() && ofFamily(fam, e.Addr) {
					add(e.Addr, port, e.State)
				}
			}
		}
		return sorted(best), true
	}
	port := uint16(p.NodePort)
	if set.BackendPort != 0 {
		port = set.BackendPort
	}
	if port == 0 {
		return nil, false
	}
	// A server on a node that may not serve is left out, unless it
	// follows its node: the node's server in the NodesBackend then takes
	// it out of service, and its backend does not change with the node's
	// state.
	track := tracksNodes(svc, set, opts, fam)
	addNode := func(n nodeInfo, st EndpointState) {
		a := nodeAddr(n, fam) // none: the node cannot serve this family
		if (n.up || track) && a.IsValid() {
			add(a, port, st)
		}
	}
	if svc.Spec.ExternalTrafficPolicy == corev1.ServiceExternalTrafficPolicyLocal {
		best = make([]model.Server, 0, CountEndpoints(eps))
		// As kube-proxy counts them: a node serves port p only if it hosts
		// an endpoint of a slice that carries p by name. The controller
		// puts Pods lacking a named targetPort in slices without that port
		// (often with no ports at all), and kube-proxy on their node drops
		// the Service's traffic.
		for _, sl := range eps {
			if _, found := slicePort(sl, p); !found || sl.FQDN {
				continue
			}
			for _, e := range sl.Endpoints {
				if e.Node == "" || !e.Addr.IsValid() {
					continue
				}
				if n, ok := nodes[e.Node]; ok {
					addNode(n, e.State)
				}
			}
		}
		return sorted(best), true
	}
	// Cluster: every eligible node, as kube-proxy on any node forwards to
	// any endpoint. When the Service's slices say the port has no endpoint
	// at all (a Deployment scaled to 0), kube-proxy on every node refuses
	// its traffic: no servers, so HAProxy refuses at once instead of
	// retrying nodes that refuse (a second per retry). No slice at all says
	// nothing (no selector, or not written yet): the nodes stay.
	if len(eps) > 0 && !hasEndpoint(eps, p) {
		return nil, true
	}
	best = make([]model.Server, 0, len(nodes))
	for _, n := range nodes {
		addNode(n, epReady)
	}
	return sorted(best), true
}

// CountEndpoints counts the endpoints of eps.
func CountEndpoints(eps []*Slice) int {
	n := 0
	for _, sl := range eps {
		n += len(sl.Endpoints)
	}
	return n
}

// hasEndpoint reports whether a slice carrying port p (as kube-proxy
// counts them) has a ready or serving-terminating endpoint.
func hasEndpoint(eps []*Slice, p corev1.ServicePort) bool {
	for _, sl := range eps {
		if _, found := slicePort(sl, p); !found || sl.FQDN {
			continue
		}
		for _, e := range sl.Endpoints {
			if e.Addr.IsValid() && e.State != epGone {
				return true
			}
		}
	}
	return false
}

// slicePort finds the slice port that serves Service port p: matched by
// name ("" for an unnamed port), protocol (TCP or UDP, as the Service
// port's), with a port number, as kube-proxy matches them.
func slicePort(sl *Slice, p corev1.ServicePort) (uint16, bool) {
	udp := p.Protocol == corev1.ProtocolUDP
	for _, sp := range sl.Ports {
		if sp.Name == p.Name && sp.Port > 0 && sp.Port < 65536 && ((udp && sp.UDP) || (!udp && sp.TCP)) {
			return uint16(sp.Port), true
		}
	}
	return 0, false
}

// sorted sorts servers by address and port and keeps one per address and
// port: in service if any endpoint behind it is (a ready endpoint wins over
// a draining one, and either over one in maintenance). It works in place,
// without a map: this runs for every Service a node change touches.
func sorted(servers []model.Server) []model.Server {
	rank := func(s model.Server) int {
		switch {
		case s.Maint:
			return 2
		case s.Drain:
			return 1
		}
		return 0
	}
	slices.SortFunc(servers, func(a, b model.Server) int {
		if c := a.Key().Compare(b.Key()); c != 0 {
			return c
		}
		return rank(a) - rank(b)
	})
	servers = slices.CompactFunc(servers, func(a, b model.Server) bool { return a.Key() == b.Key() })
	if servers == nil {
		return []model.Server{}
	}
	return slices.Clip(servers)
}
