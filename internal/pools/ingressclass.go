package pools

import (
	"net/netip"
	"slices"
	"strings"

	netv1 "k8s.io/api/networking/v1"

	"github.com/haproxy-k8s-sync/haproxy-k8s-sync/internal/settings"
)

// IngressClassFamiliesAnnotation names the IP families of an
// IngressClass's pool address, as a Service's spec.ipFamilies does:
// "IPv4" (the default), "IPv6", or both comma-separated (one address of
// each).
const IngressClassFamiliesAnnotation = settings.Prefix + "ip-families"

// IngressClassFamilies reads ic's ip-families annotation (IPv4 when
// unset); an error (settings.ErrInvalid) names the value it cannot read.
func IngressClassFamilies(ic *netv1.IngressClass) ([]int, error) {
	v, ok := ic.Annotations[IngressClassFamiliesAnnotation]
	if !ok {
		return []int{4}, nil
	}
	var out []int
	for _, f := range strings.Split(v, ",") {
		n := map[string]int{"IPv4": 4, "IPv6": 6}[strings.TrimSpace(f)]
		if n == 0 || slices.Contains(out, n) {
			return nil, &settings.FieldError{Key: IngressClassFamiliesAnnotation, Value: v, Reason: "want IPv4, IPv6 or both, comma-separated"}
		}
		out = append(out, n)
	}
	return out, nil
}

// IngressClassKey is the key of an IngressClass's request: apart from
// Services' and Gateways', and readable in a Problem's message.
func IngressClassKey(name string) string { return "IngressClass " + name }

// IngressClassRequest reads what an IngressClass of ours asks of the
// pools: one address of the pool its address-pool annotation names, of
// each family its ip-families annotation lists (IPv4 when none; every
// Ingress of the class is served there), shared as its
// allow-shared-ip annotation says, on ports (the Ingresses' TCP ports).
// current are the addresses it had (the claims, the last pass's, what
// its Ingresses' status lists), kept while valid. ok false: the class
// names no pool, and asks for nothing; err: its ip-families annotation
// cannot be read (it then asks for nothing either). An IngressClass is cluster-scoped:
// a pool restricted to namespaces (or by namespaceSelector) does not
// serve it; a serviceSelector is matched against the class's labels.
func IngressClassRequest(ic *netv1.IngressClass, ports []uint16, current []netip.Addr) (r Request, ok bool, err error) {
	pool := ic.Annotations[PoolAnnotation]
	if pool == "" {
		return Request{}, false, nil
	}
	fams, err := IngressClassFamilies(ic)
	if err != nil {
		return Request{}, false, err
	}
	r = Request{Key: IngressClassKey(ic.Name), Labels: ic.Labels, Created: ic.CreationTimestamp.Time,
		Pool: pool, ShareKey: ic.Annotations[SharedIPAnnotation], Families: fams}
	for _, p := range ports {
		if pt := (Port{"TCP", int32(p)}); !slices.Contains(r.Ports, pt) {
			r.Ports = append(r.Ports, pt)
		}
	}
	for _, a := range current {
		if a = a.Unmap(); slices.Contains(fams, family(a)) && !slices.Contains(r.Current, a) {
			r.Current = append(r.Current, a)
		}
	}
	return r, true, nil // no Ours: an address no pool holds any more is not kept
}
