package gateway

import (
	"slices"

	"github.com/haproxy-k8s-sync/haproxy-k8s-sync/internal/desired"
	"github.com/haproxy-k8s-sync/haproxy-k8s-sync/internal/model"
)

// maxUDPEntries bounds the entries of a UDP port's server map that
// weights may ask for.
const maxUDPEntries = 4096

// udpServers are the servers of a UDP route's backendRefs and the weight
// of each (its share of new flows): each backendRef's weight split
// evenly between its ready servers, in the smallest whole numbers that
// keep the ratios (or close to them, within maxUDPEntries). Refs that do
// not resolve have no server here: their share goes to the others (UDP
// has no refusal to send; docs/gateway.md says so).
func udpServers(refs []resolvedRef, w *world) ([]model.Server, []uint16) {
	type part struct {
		servers []model.Server
		weight  int64
	}
	var parts []part
	l := int64(1)
	for _, rr := range refs {
		if rr.why != "" || rr.weight <= 0 {
			continue
		}
		s := desired.PodServers(w.slices[rr.svc], rr.port)
		n := int64(0)
		for _, sv := range s {
			if !sv.Drain {
				n++
			}
		}
		if n == 0 {
			continue
		}
		parts = append(parts, part{s, int64(rr.weight)})
		l = lcm(l, n)
		if l > maxUDPEntries {
			l = maxUDPEntries
		}
	}
	weights := map[model.Server]int64{}
	var total int64
	for _, p := range parts {
		n := int64(0)
		for _, sv := range p.servers {
			if !sv.Drain {
				n++
			}
		}
		for _, sv := range p.servers {
			if sv.Drain {
				weights[sv] += 0
				continue
			}
			wt := max(p.weight*l/n, 1)
			weights[sv] += wt
			total += wt
		}
	}
	// Scale down to at most maxUDPEntries entries, then by the common
	// divisor.
	g := int64(0)
	for sv, wt := range weights {
		if total > maxUDPEntries && wt > 0 {
			wt = max(wt*maxUDPEntries/total, 1)
			weights[sv] = wt
		}
		g = gcd(g, wt)
	}
	servers := make([]model.Server, 0, len(weights))
	for sv := range weights {
		servers = append(servers, sv)
	}
	slices.SortFunc(servers, func(a, b model.Server) int { return a.Key().Compare(b.Key()) })
	out := make([]uint16, len(servers))
	for i, sv := range servers {
		if g > 0 {
			out[i] = uint16(weights[sv] / g)
		}
	}
	return servers, out
}

func gcd(a, b int64) int64 {
	for b != 0 {
		a, b = b, a%b
	}
	return a
}

func lcm(a, b int64) int64 { return a / gcd(a, b) * b }
