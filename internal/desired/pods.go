package desired

import (
	corev1 "k8s.io/api/core/v1"

	"github.com/haproxy-k8s-sync/haproxy-k8s-sync/internal/model"
)

// PodServers are the servers of Service port p when the load balancer
// sends traffic straight to Pods: each ready (or draining) endpoint's
// address with the port its slice carries for p (matched by name and
// protocol, as kube-proxy matches them), sorted, one per address and
// port. eps are the Service's slices. Other sources (Gateway API routes)
// build their backends with it.
func PodServers(eps []*Slice, p corev1.ServicePort) []model.Server {
	var out []model.Server
	for _, sl := range eps {
		port, found := slicePort(sl, p)
		if !found || sl.FQDN {
			continue
		}
		for _, e := range sl.Endpoints {
			if e.Addr.IsValid() && e.State != epGone {
				out = append(out, model.Server{Addr: e.Addr, Port: port, Drain: e.State == epDrain})
			}
		}
	}
	return sorted(out)
}
