package ingress

import (
	"net/netip"
	"strings"

	corev1 "k8s.io/api/core/v1"

	"github.com/haproxy-k8s-sync/haproxy-k8s-sync/internal/model"
	"github.com/haproxy-k8s-sync/haproxy-k8s-sync/internal/settings"
)

// service-upstream (ingress-nginx and HAProxy Ingress): the Ingress's
// backends send to the Service's cluster IP and port, one server,
// instead of to its Pods, and kube-proxy picks the Pod. The backend is
// one of its own (suffixed "u": its one server is not the Pods'). A
// Service without a cluster IP (headless) cannot be served so: its paths
// are answered as a backend not found.

// parseUpstream reads service-upstream ("true" or "false").
func parseUpstream(val string) (bool, string) {
	switch strings.ToLower(val) {
	case "true":
		return true, ""
	case "false":
		return false, ""
	}
	return false, settings.ShowValue(val) + " is not true or false"
}

// clusterServer is the one server of Service svc's port when it is
// reached through its cluster IP; why when it has none.
func clusterServer(svc *corev1.Service, port corev1.ServicePort) ([]model.Server, string) {
	a, err := netip.ParseAddr(svc.Spec.ClusterIP)
	if err != nil || !a.IsValid() {
		return nil, "Service " + svc.Namespace + "/" + svc.Name + " has no cluster IP (service-upstream)"
	}
	return []model.Server{{Addr: a, Port: uint16(port.Port)}}, ""
}
