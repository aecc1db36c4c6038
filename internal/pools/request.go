package pools

import (
	"errors"
	"net/netip"
	"strconv"

	corev1 "k8s.io/api/core/v1"
)

// RequestFor reads what svc asks for: the load-balancer-ips annotation,
// else spec.loadBalancerIP; the address-pool and allow-shared-ip
// annotations; its IP families and ports; and the addresses its status
// lists. An annotation it cannot read is an error, and the request then
// keeps only the current addresses (nothing changes for the Service).
func RequestFor(svc *corev1.Service, nsLabels map[string]string) (Request, error) {
	r := Request{
		Key: svc.Namespace + "/" + svc.Name, Namespace: svc.Namespace,
		NamespaceLabels: nsLabels, Labels: svc.Labels,
		Pool: svc.Annotations[PoolAnnotation], ShareKey: svc.Annotations[SharedIPAnnotation],
	}
	for _, f := range svc.Spec.IPFamilies {
		switch f {
		case corev1.IPv4Protocol:
			r.Families = append(r.Families, 4)
		case corev1.IPv6Protocol:
			r.Families = append(r.Families, 6)
		}
	}
	if p := svc.Spec.IPFamilyPolicy; p != nil && *p == corev1.IPFamilyPolicySingleStack && len(r.Families) > 1 {
		r.Families = r.Families[:1]
	}
	for _, p := range svc.Spec.Ports {
		proto := string(p.Protocol)
		if proto == "" {
			proto = string(corev1.ProtocolTCP)
		}
		r.Ports = append(r.Ports, Port{proto, p.Port})
	}
	for _, in := range svc.Status.LoadBalancer.Ingress {
		if a, err := netip.ParseAddr(in.IP); err == nil && in.IP != "" {
			r.Current = append(r.Current, a.Unmap())
		}
	}
	var err error
	switch {
	case svc.Annotations[IPsAnnotation] != "":
		r.IPs, err = ParseIPs(svc.Annotations[IPsAnnotation])
	case svc.Spec.LoadBalancerIP != "":
		if r.IPs, err = ParseIPs(svc.Spec.LoadBalancerIP); err != nil {
			err = errors.New("spec.loadBalancerIP: invalid value " + strconv.Quote(svc.Spec.LoadBalancerIP) + ": want one IP address")
		}
	}
	if err != nil {
		r.IPs, r.Pool, r.KeepOnly = nil, "", true
	}
	return r, err
}
