package cli

import (
	"fmt"
	"io"
	"maps"
	"net/netip"
	"slices"
	"strings"

	corev1 "k8s.io/api/core/v1"

	"github.com/haproxy-k8s-sync/haproxy-k8s-sync/internal/desired"
	"github.com/haproxy-k8s-sync/haproxy-k8s-sync/internal/objects"
	"github.com/haproxy-k8s-sync/haproxy-k8s-sync/internal/pools"
)

// renderAllocation hands out the addresses of the AddressPools in set as
// a controller would (statuses included: an address a Service's status
// lists stays), and tells them on stderr, one line per Service.
func renderAllocation(set objects.Set, opts desired.Options, stderr io.Writer) (map[string][]netip.Addr, []desired.Problem) {
	var ps []pools.Pool
	for _, ap := range set.AddressPools {
		p, err := ap.Pool()
		if err != nil {
			fmt.Fprintf(stderr, "warning: AddressPool %s: %v; not used\n", ap.Name, err)
			continue
		}
		ps = append(ps, p)
	}
	res, probs := pools.ForServices(ps, set.Services, nil, func(s *corev1.Service) bool { return desired.Selected(s, opts) })
	for _, k := range slices.Sorted(maps.Keys(res.Assigned)) {
		var as []string
		for _, a := range res.Assigned[k] {
			as = append(as, a.String())
		}
		fmt.Fprintf(stderr, "address: Service %s: %s\n", k, strings.Join(as, ", "))
	}
	var out []desired.Problem
	for _, p := range probs {
		out = append(out, desired.Problem{Service: p.Service, Reason: p.Reason, Message: p.Message})
	}
	return res.Assigned, out
}
