package pools

import (
	"cmp"
	"errors"
	"net/netip"
	"slices"
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
		NamespaceLabels: nsLabels, Labels: svc.Labels, Created: svc.CreationTimestamp.Time,
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
			if in.IPMode != nil && *in.IPMode == corev1.LoadBalancerIPModeProxy {
				r.Ours = append(r.Ours, a.Unmap())
			}
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

// ServiceProblem is a Problem with the Service it is about.
type ServiceProblem struct {
	Service *corev1.Service
	Problem
}

// ForServices allocates for the LoadBalancer Services that selected
// accepts, oldest first (then by namespace/name), with the namespaces'
// labels: the requests of the controller's passes and of `render`.
func ForServices(ps []Pool, svcs []*corev1.Service, nsLabels map[string]map[string]string, selected func(*corev1.Service) bool) (Result, []ServiceProblem) {
	return ForServicesWith(ps, svcs, nsLabels, selected, nil, nil, nil)
}

// ForServicesWith is ForServices with the requests of other objects
// (the Gateways' reservations, GatewayRequest with KeepOnly) among the
// Services', in age order (SortRequests), and prev, the last allocation's
// assignments (nil for none): a Service keeps what the last pass gave it
// until its status lists it, so an address given a moment ago does not
// move to an older Service that appears meanwhile (Services created
// within a second are ordered by name). Their problems are not returned:
// they are the other objects' controller's to report.
//
// With claims (internal/claims; nil: none are made) a claimed address
// goes only to its holder (AllocateClaimed), and a Service's addresses not
// yet claimed for it are in Result.Pending, not Assigned (SplitClaimed).
func ForServicesWith(ps []Pool, svcs []*corev1.Service, nsLabels map[string]map[string]string, selected func(*corev1.Service) bool, others []Request, prev map[string][]netip.Addr, claims Claims) (Result, []ServiceProblem) {
	byKey := make(map[string]*corev1.Service, len(svcs))
	published, share := make(map[string][]netip.Addr, len(svcs)), make(map[string]string, len(svcs))
	reqs := make([]Request, 0, len(svcs)+len(others))
	var probs []ServiceProblem
	var sel []*corev1.Service
	for _, s := range svcs {
		if s.Spec.Type == corev1.ServiceTypeLoadBalancer && selected(s) {
			sel = append(sel, s)
		}
	}
	slices.SortFunc(sel, func(a, b *corev1.Service) int {
		if x := a.CreationTimestamp.Time.Compare(b.CreationTimestamp.Time); x != 0 {
			return x
		}
		return cmp.Compare(a.Namespace+"/"+a.Name, b.Namespace+"/"+b.Name)
	})
	for _, s := range sel {
		r, err := RequestFor(s, nsLabels[s.Namespace])
		if err != nil {
			probs = append(probs, ServiceProblem{s, Problem{r.Key, ReasonInvalidRequest, err.Error() + "; the Service keeps the addresses it has"}})
		}
		published[r.Key], share[r.Key] = r.Current, r.ShareKey
		for _, a := range prev[r.Key] {
			if !slices.Contains(r.Current, a) {
				r.Current = append(slices.Clip(r.Current), a)
			}
		}
		byKey[r.Key] = s
		reqs = append(reqs, r)
	}
	reqs = append(reqs, others...)
	SortRequests(reqs)
	res := AllocateClaimed(ps, reqs, claims)
	res.SplitClaimed(claims, published, share)
	for _, p := range res.Problems {
		if s, ok := byKey[p.Key]; ok {
			probs = append(probs, ServiceProblem{s, p})
		}
	}
	return res, probs
}

// ReasonInvalidRequest: the Service's load-balancer-ips annotation or
// spec.loadBalancerIP could not be read.
const ReasonInvalidRequest = "InvalidAnnotation"
