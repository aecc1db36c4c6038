package desired

import (
	"net/netip"
	"slices"

	corev1 "k8s.io/api/core/v1"

	"github.com/haproxy-k8s-sync/haproxy-k8s-sync/internal/model"
	"github.com/haproxy-k8s-sync/haproxy-k8s-sync/internal/settings"
)

// nodeAddrs maps each eligible node (Ready, not excluded) to its InternalIP,
// preferring IPv4.
func nodeAddrs(nodes []*corev1.Node) map[string]netip.Addr {
	out := make(map[string]netip.Addr, len(nodes))
	for _, n := range nodes {
		if _, excluded := n.Labels[ExcludeLabel]; excluded || !nodeReady(n) {
			continue
		}
		var best netip.Addr
		for _, a := range n.Status.Addresses {
			if a.Type != corev1.NodeInternalIP {
				continue
			}
			ip, err := netip.ParseAddr(a.Address)
			if err != nil {
				continue
			}
			if !best.IsValid() || (ip.Is4() && !best.Is4()) {
				best = ip.Unmap()
			}
		}
		if best.IsValid() {
			out[n.Name] = best
		}
	}
	return out
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

// serversFor lists the servers of one Service port. ok is false when the
// port cannot be reached (no nodePort in node mode and no override).
func serversFor(svc *corev1.Service, p corev1.ServicePort, set settings.Settings, targets string,
	nodes map[string]netip.Addr, eps []*Slice) ([]model.Server, bool) {
	var best []model.Server // deduplicated by sorted()
	add := func(a netip.Addr, port uint16, st EndpointState) {
		if st != epGone {
			best = append(best, model.Server{Addr: a, Port: port, Drain: st == epDrain})
		}
	}
	if targets == TargetPods {
		for _, sl := range eps {
			port, found := slicePort(sl, p)
			if set.BackendPort != 0 {
				port, found = set.BackendPort, true
			}
			if !found || sl.FQDN {
				continue
			}
			for _, e := range sl.Endpoints {
				if e.Addr.IsValid() {
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
	if svc.Spec.ExternalTrafficPolicy == corev1.ServiceExternalTrafficPolicyLocal {
		for _, sl := range eps {
			for _, e := range sl.Endpoints {
				if e.Node == "" {
					continue
				}
				if a, ok := nodes[e.Node]; ok {
					add(a, port, e.State)
				}
			}
		}
		return sorted(best), true
	}
	for _, a := range nodes {
		add(a, port, epReady)
	}
	return sorted(best), true
}

// slicePort finds the slice port that serves Service port p: matched by
// name, as the endpoint-slice controller names them.
func slicePort(sl *Slice, p corev1.ServicePort) (uint16, bool) {
	for _, sp := range sl.Ports {
		if sp.Name == p.Name && sp.Port > 0 && sp.Port < 65536 && sp.TCP {
			return uint16(sp.Port), true
		}
	}
	return 0, false
}

// sorted sorts servers by address and port and keeps one per address and
// port: in service if any endpoint behind it is (a ready endpoint wins over
// a draining one). It works in place, without a map: this runs for every
// Service a node change touches.
func sorted(servers []model.Server) []model.Server {
	slices.SortFunc(servers, func(a, b model.Server) int {
		if c := a.Key().Compare(b.Key()); c != 0 {
			return c
		}
		if a.Drain == b.Drain {
			return 0
		}
		if !a.Drain {
			return -1
		}
		return 1
	})
	servers = slices.CompactFunc(servers, func(a, b model.Server) bool { return a.Key() == b.Key() })
	if servers == nil {
		return []model.Server{}
	}
	return slices.Clip(servers)
}
