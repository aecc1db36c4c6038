package desired

import (
	corev1 "k8s.io/api/core/v1"

	"github.com/haproxy-k8s-sync/haproxy-k8s-sync/internal/settings"
)

// This file decides how the servers of a Service are health-checked. There
// are three kinds of checks (docs/health-checks.md):
//
//   - the node check (Options.NodeCheck): one per node, on its server in
//     the model.NodesBackend, inherited by every server that follows its
//     node (model.Backend.TrackNodes);
//   - kube-proxy's per-Service health check of a Local Service
//     (spec.healthCheckNodePort, Options.LocalHealthCheck), checked on
//     each server;
//   - the server's own port, checked on each server.
//
// HAProxy refuses "check" and "track" on the same server: a server either
// follows its node or is checked by itself ("own check"), never both.
// Where nothing follows a node but the node check was asked for (the Data
// Plane API's single-Service mode: Options.CarryNodeCheck), the servers
// that would follow their node carry the node check themselves.

// ownCheck reports whether the servers of svc of family fam, whose settings are set, are
// health-checked by themselves, on their own port or on the Service's
// healthCheckNodePort (see healthCheckNodePort). The check setting decides,
// and for auto:
//   - pod targets: checked by themselves (the pod's port; there is no node
//     to follow);
//   - node targets with --local-check=health-check-node-port and a Local
//     Service that has a healthCheckNodePort: checked there, as cloud load
//     balancers check;
//   - node targets otherwise: they follow their node when nodes are
//     tracked and checked (Options.TrackNodes and NodeCheck.Enabled), and
//     inherit its check; else they are checked by themselves, as before
//     the node check existed.
func ownCheck(svc *corev1.Service, set settings.Settings, opts Options, fam family) bool {
	switch set.Check {
	case settings.CheckTrue:
		return true
	case settings.CheckFalse:
		return false
	}
	if podTargets(svc, opts) || fam == famV6 || healthCheckNodePort(svc, set, opts) != 0 {
		return true
	}
	return !(opts.TrackNodes && opts.NodeCheck.Enabled)
}

// tracksNodes reports whether the servers of svc follow their node's state
// in HAProxy (model.Backend.TrackNodes): in node mode, with --track-nodes,
// when they have no check of their own.
func tracksNodes(svc *corev1.Service, set settings.Settings, opts Options, fam family) bool {
	// The NodesBackend holds the nodes' IPv4 addresses: servers at IPv6
	// addresses cannot follow them.
	return opts.TrackNodes && !podTargets(svc, opts) && fam != famV6 && !ownCheck(svc, set, opts, fam)
}

// carriesNodeCheck reports whether the servers of svc carry the node
// check themselves (Options.CarryNodeCheck): they would follow their node
// (as tracksNodes decides with nodes tracked) but nothing follows a node.
func carriesNodeCheck(svc *corev1.Service, set settings.Settings, opts Options, fam family) bool {
	if !opts.CarryNodeCheck || opts.TrackNodes || !opts.NodeCheck.Enabled {
		return false
	}
	opts.TrackNodes = true
	return tracksNodes(svc, set, opts, fam)
}

// healthCheckNodePort is the port of kube-proxy's per-Service health check
// (GET / answers 200 while the node has a ready endpoint of svc) that checks
// svc's servers when they have a check of their own, or 0 for their own
// port: it applies with --local-check=health-check-node-port, in node mode,
// to Local Services that have one, unless a backend-port setting sends the
// traffic elsewhere.
func healthCheckNodePort(svc *corev1.Service, set settings.Settings, opts Options) uint16 {
	hc := svc.Spec.HealthCheckNodePort
	if !opts.LocalHealthCheck || podTargets(svc, opts) || set.BackendPort != 0 ||
		svc.Spec.ExternalTrafficPolicy != corev1.ServiceExternalTrafficPolicyLocal || hc <= 0 || hc >= 65536 {
		return 0
	}
	return uint16(hc)
}

// podTargets reports whether svc's servers are its endpoints (pod
// IP:targetPort) rather than nodes: with --targets=pods, and for a
// LoadBalancer Service with spec.allocateLoadBalancerNodePorts: false, which
// has no nodePort to reach (the load balancer must then route to the pod
// network, as with --targets=pods).
func podTargets(svc *corev1.Service, opts Options) bool {
	if opts.Targets == TargetPods {
		return true
	}
	a := svc.Spec.AllocateLoadBalancerNodePorts
	return a != nil && !*a && svc.Spec.Type == corev1.ServiceTypeLoadBalancer
}
