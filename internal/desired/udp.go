package desired

import (
	"cmp"
	"net/netip"
	"slices"
	"strconv"

	corev1 "k8s.io/api/core/v1"

	"github.com/haproxy-k8s-sync/haproxy-k8s-sync/internal/model"
	"github.com/haproxy-k8s-sync/haproxy-k8s-sync/internal/settings"
)

// withUDP adds the UDP part of the model to res: one model.UDPService per
// UDP port of the selected Services (svcs: those of them with a UDP port,
// see udpCandidates), with the same servers as a TCP port
// would have (eligible nodes' InternalIP:nodePort under either
// externalTrafficPolicy, or the endpoints with --targets=pods) and the
// same settings (res.Good). It is computed afresh on every pass, fast or
// not: there are few UDP ports, and this keeps the memo to TCP.
//
// res may share its Problems and Configured with the memo: they are
// copied before anything is added.
func withUDP(res Result, svcs []candidate, opts Options, nodes map[string]nodeInfo, bySvc map[string][]*Slice, addrs map[string][]netip.Addr) Result {
	var (
		udp        []model.UDPService
		problems   []Problem
		configured []*corev1.Service
		claimed    map[claim]string
	)
	// UDP servers never follow a node through HAProxy: a node that may
	// not serve is left out.
	sopts := opts
	sopts.TrackNodes = false
	for _, c := range svcs {
		setp, ok := res.Good[c.key]
		if !ok {
			continue // never had valid annotations: reported, left out
		}
		set := *setp
		added := false
		for _, p := range c.svc.Spec.Ports {
			if !isUDP(p) {
				continue
			}
			if !opts.UDP {
				problems = append(problems, Problem{c.svc, ReasonUnsupportedProtocol,
					"port " + portLabel(p) + ": protocol UDP is not load balanced: " + opts.UDPOff})
				continue
			}
			if set.Balance != model.BalanceRoundRobin && set.Balance != model.BalanceSource {
				problems = append(problems, Problem{c.svc, ReasonUnsupportedBalance,
					"port " + portLabel(p) + ": balance " + set.Balance + " is not available for UDP (roundrobin or source); this port is not configured"})
				continue
			}
			binds := bindsFor(c.svc, p.Port, addrs[c.key], opts)
			ok := false
			if pooled(c.svc, opts) && len(binds) == 0 {
				continue // no address (yet)
			}
			if owner := taken(claimed, binds); owner != "" {
				problems = append(problems, Problem{c.svc, ReasonPortConflict,
					"UDP port " + strconv.Itoa(int(p.Port)) + " is already used by Service " + owner + "; this port is not configured"})
				continue
			}
			// One UDPService serves both families: the kernel sends each
			// family's datagrams to that family's servers.
			var servers []model.Server
			for _, g := range groupsOf(c.svc, binds) {
				s, good := serversFor(c.svc, p, set, sopts, nodes, bySvc[c.key], g.fam)
				servers, ok = append(servers, s...), good
			}
			if servers != nil {
				servers = sorted(servers)
			}
			if !ok {
				problems = append(problems, Problem{c.svc, ReasonNoNodePort,
					"port " + portLabel(p) + " has no nodePort; set the backend-port annotation or use --targets=pods"})
				continue
			}
			if claimed == nil {
				claimed = make(map[claim]string)
			}
			claimAll(claimed, binds, c.key)
			udp = append(udp, udpService(c, p, set, opts, servers, binds))
			added = true
		}
		if added && !slices.Contains(res.Configured, c.svc) {
			configured = append(configured, c.svc)
		}
	}
	slices.SortFunc(udp, func(a, b model.UDPService) int { return cmp.Compare(a.Name, b.Name) })
	res.Config.UDP = udp
	if len(problems) > 0 {
		res.Problems = slices.Concat(res.Problems, problems)
	}
	if len(configured) > 0 {
		res.Configured = slices.Concat(res.Configured, configured)
	}
	return res
}

func isUDP(p corev1.ServicePort) bool { return p.Protocol == corev1.ProtocolUDP }

// udpCandidates are the candidates with a UDP port, in their order.
func udpCandidates(svcs []candidate) []candidate {
	var out []candidate
	for _, c := range svcs {
		if slices.ContainsFunc(c.svc.Spec.Ports, isUDP) {
			out = append(out, c)
		}
	}
	return out
}

func udpService(c candidate, p corev1.ServicePort, set settings.Settings, opts Options, servers []model.Server, binds []model.Bind) model.UDPService {
	u := model.UDPService{
		Name:         model.Name("udp", c.svc.Namespace, c.svc.Name, strconv.Itoa(int(p.Port))),
		Service:      c.key,
		Balance:      set.Balance,
		Probe:        !podTargets(c.svc, opts),
		SourceRanges: settings.SourceRangesOf(set.SourceRanges),
		Servers:      servers,
	}
	if set.Affinity > 0 {
		// ClientIP affinity: the kernel remembers each client's server
		// for the timeout; a new client (or one whose entry expired)
		// goes where a hash of its address says, so that it keeps its
		// server while the servers stay the same even without the entry.
		u.Balance, u.Affinity = model.BalanceSource, set.Affinity
	}
	for _, b := range binds {
		b.Transparent = false // nothing binds: the kernel's rules name the address
		u.Binds = append(u.Binds, b)
	}
	return u
}
