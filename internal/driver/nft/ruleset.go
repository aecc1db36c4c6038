// Package nft load balances the UDP ports of the model (model.UDPService)
// in the Linux kernel, through one nftables table that it owns entirely:
// `inet haproxy_k8s_sync`. HAProxy has no UDP; this is the kernel's
// stateful NAT instead: the first datagram of a flow is DNATed to a server
// chosen by `numgen inc` (roundrobin) or a hash of the client address
// (source), and masqueraded so replies come back through the load
// balancer; conntrack keeps every later datagram of the flow on that
// server, whatever the rules become.
//
// The table holds a few fixed rules and, per UDP port, one chain and one
// map of servers per address family. Dispatch to a port's chain goes
// through verdict maps, so adding or removing a port, or changing its
// servers, is a change of map elements (and of the port's chain when its
// server count changes), sent in one netlink batch: the kernel applies it
// atomically and nothing else in the table is touched.
//
// This file is the pure part: what the table holds for a set of UDP
// services (Plan) and its text in `nft -f` syntax (Render).
package nft

import (
	"bytes"
	"fmt"
	"net/netip"
	"slices"
	"strings"
	"time"

	"github.com/haproxy-k8s-sync/haproxy-k8s-sync/internal/model"
)

// Table is the name of the table this package owns, in family inet.
const Table = "haproxy_k8s_sync"

// Names of the fixed objects of the table.
const (
	chainPre   = "prerouting"  // nat prerouting: dispatch to a port's chain
	chainPost  = "postrouting" // nat postrouting: masquerade what we DNATed
	setPorts   = "ports"       // the listen ports, for masquerade
	mapAny     = "dispatch"    // port : goto chain, for every local address
	mapAddr4   = "dispatch4"   // IPv4 address . port : goto chain
	mapAddr6   = "dispatch6"   // IPv6 address . port : goto chain
	suffixV4   = "_v4"         // a port's map of IPv4 servers: index : addr . port
	suffixV6   = "_v6"
	maxServers = 1 << 16 // most servers of one family a port may have
)

// Service is what the table holds for one UDP port.
type Service struct {
	Name    string // the port's chain; its server maps are Name+"_v4", Name+"_v6"
	Port    uint16
	Any     bool         // listens on every local address
	Addrs   []netip.Addr // listen addresses, when not Any
	Balance string       // model.BalanceRoundRobin or model.BalanceSource
	// V4 and V6 are the servers new flows go to, by index in the map
	// (numgen or hash modulo their count).
	V4, V6 []netip.AddrPort
	// Drain are servers that take no new flow but keep their flows.
	Drain []netip.AddrPort
	// Restricted: only sources in Src4 and Src6 (canonicalRanges of
	// the port's source ranges) are served; others are dropped.
	Restricted bool
	Src4, Src6 []netip.Prefix
	// Affinity, when set, keeps a client on its server for this long
	// after its last new flow (affinity.go), in each family whose servers
	// share one port: AffPort4, AffPort6 (0: none).
	Affinity           time.Duration
	AffPort4, AffPort6 uint16
	// affStale: read back, the record chain is not what this package
	// writes.
	affStale bool
	// stale: read back from the kernel, the chain's rules are not what
	// this package writes; they are replaced. srcStale: the same for the
	// elements of the source sets.
	stale, srcStale bool
}

// Plan turns UDP services into what the table holds. prev, the Services
// currently in the table by name (may be nil), keeps the index of every
// server that stays (a source hash then keeps sending a client to the
// same server while the count is unchanged). Servers whose address is
// rejected by down (a failing health probe; nil: none) are left out of
// services with Probe.
func Plan(udp []model.UDPService, prev map[string]Service, down func(netip.Addr) bool) []Service {
	out := make([]Service, 0, len(udp))
	for _, u := range udp {
		s := Service{Name: u.Name, Port: u.Port(), Balance: u.Balance}
		if len(u.SourceRanges) > 0 {
			s.Restricted = true
			s.Src4, s.Src6 = canonicalRanges(u.SourceRanges)
		}
		for _, b := range u.Binds {
			if b.Addr.IsValid() {
				s.Addrs = append(s.Addrs, b.Addr)
			} else {
				s.Any = true
			}
		}
		if s.Any {
			s.Addrs = nil
		}
		slices.SortFunc(s.Addrs, netip.Addr.Compare)
		s.Addrs = slices.Compact(s.Addrs)
		var v4, v6 []netip.AddrPort
		for i, sv := range u.Servers {
			// A weighted server (a Gateway API backendRef's share) has
			// that many entries in its map: numgen and the hash pick
			// entries, not servers.
			n := 1
			if len(u.Weights) == len(u.Servers) {
				n = int(u.Weights[i])
			}
			switch {
			case sv.Maint, sv.Addr.Zone() != "": // a zoned address is no server (and no nft syntax)
			case u.Probe && down != nil && down(sv.Addr):
			case sv.Drain:
				s.Drain = append(s.Drain, sv.Key())
			case sv.Addr.Is4():
				v4 = appendN(v4, sv.Key(), n)
			default:
				v6 = appendN(v6, sv.Key(), n)
			}
		}
		old := prev[u.Name]
		s.V4, s.V6 = keepIndices(old.V4, v4), keepIndices(old.V6, v6)
		if u.Affinity > 0 {
			s.Affinity = u.Affinity.Truncate(time.Second)
			affinityPorts(&s)
		}
		out = append(out, s)
	}
	return out
}

func appendN(s []netip.AddrPort, a netip.AddrPort, n int) []netip.AddrPort {
	for range n {
		s = append(s, a)
	}
	return s
}

// keepIndices orders want (sorted; a weighted server appears several
// times) so that a server of old keeps its indices when they still exist,
// as many as it still has; the others fill the gaps in order.
func keepIndices(old, want []netip.AddrPort) []netip.AddrPort {
	if len(want) > maxServers {
		want = want[:maxServers]
	}
	out := make([]netip.AddrPort, len(want))
	left := make(map[netip.AddrPort]int, len(want)) // entries still to place
	for _, w := range want {
		left[w]++
	}
	for i, o := range old {
		if i < len(out) && left[o] > 0 {
			out[i] = o
			left[o]--
		}
	}
	j := 0
	for i := range out {
		if out[i].IsValid() {
			continue
		}
		for left[want[j]] == 0 {
			j++
		}
		out[i] = want[j]
		left[want[j]]--
	}
	return out
}

// Render is the table for services in `nft -f` syntax: the whole table,
// replaced atomically when given to `nft -f` (a leading `table ...`
// creates it and `delete table ...` clears an older one first, so the file
// can be applied to a host that has one).
func Render(services []Service) []byte {
	var b bytes.Buffer
	w := func(indent int, format string, args ...any) {
		b.WriteString(strings.Repeat("\t", indent))
		fmt.Fprintf(&b, format, args...)
		b.WriteByte('\n')
	}
	w(0, "# UDP load balancing of haproxy-k8s-sync (the controller owns this table)")
	w(0, "table inet %s", Table)
	w(0, "delete table inet %s", Table)
	w(0, "table inet %s {", Table)
	for _, s := range services {
		w(1, "chain %s {", s.Name)
		for _, r := range serviceRules(s) {
			w(2, "%s", r)
		}
		w(1, "}")
		if s.Affinity > 0 {
			w(1, "chain %s {", s.Name+suffixAffCh)
			for _, r := range recordRules(s) {
				w(2, "%s", r)
			}
			w(1, "}")
		}
	}
	var ports []string
	var any, addr4, addr6 []string
	seen := map[uint16]bool{}
	for _, s := range services {
		if !seen[s.Port] {
			seen[s.Port] = true
			ports = append(ports, fmt.Sprint(s.Port))
		}
		if s.Any {
			any = append(any, fmt.Sprintf("%d : goto %s", s.Port, s.Name))
		}
		for _, a := range s.Addrs {
			e := fmt.Sprintf("%s . %d : goto %s", a, s.Port, s.Name)
			if a.Is4() {
				addr4 = append(addr4, e)
			} else {
				addr6 = append(addr6, e)
			}
		}
	}
	ports = sortedNumbers(ports)
	set := func(kind, name, typ string, elems []string) {
		w(1, "%s %s {", kind, name)
		w(2, "%s", typ)
		if len(elems) > 0 {
			w(2, "elements = { %s }", strings.Join(elems, ", "))
		}
		w(1, "}")
	}
	set("set", setPorts, "type inet_service", ports)
	set("map", mapAny, "type inet_service : verdict", any)
	set("map", mapAddr4, "type ipv4_addr . inet_service : verdict", addr4)
	set("map", mapAddr6, "type ipv6_addr . inet_service : verdict", addr6)
	var aff4, aff6 []string
	for a, c := range affinityElements(services) {
		e := fmt.Sprintf("%s . %d : goto %s", a.Addr(), a.Port(), c)
		if a.Addr().Is4() {
			aff4 = append(aff4, e)
		} else {
			aff6 = append(aff6, e)
		}
	}
	slices.Sort(aff4)
	slices.Sort(aff6)
	set("map", mapAff4, "type ipv4_addr . inet_service : verdict", aff4)
	set("map", mapAff6, "type ipv6_addr . inet_service : verdict", aff6)
	for _, s := range services {
		set("map", s.Name+suffixV4, "typeof numgen inc mod 1 : ip daddr . udp dport", indexed(s.V4))
		set("map", s.Name+suffixV6, "typeof numgen inc mod 1 : ip6 daddr . udp dport", indexed(s.V6))
		if s.Restricted {
			set("set", s.Name+suffixSrc4, "type ipv4_addr\n\t\tflags interval", srcText(s.Src4))
			set("set", s.Name+suffixSrc6, "type ipv6_addr\n\t\tflags interval", srcText(s.Src6))
		}
		if s.Affinity > 0 {
			dyn := fmt.Sprintf("\n\t\tsize %d\n\t\tflags dynamic,timeout", affSize)
			set("map", s.Name+suffixAff4, "type ipv4_addr : ipv4_addr"+dyn, nil)
			set("map", s.Name+suffixAff6, "type ipv6_addr : ipv6_addr"+dyn, nil)
		}
	}
	w(1, "chain %s {", chainPre)
	w(2, "type nat hook prerouting priority dstnat; policy accept;")
	w(2, "meta l4proto udp ip daddr . udp dport vmap @%s", mapAddr4)
	w(2, "meta l4proto udp ip6 daddr . udp dport vmap @%s", mapAddr6)
	w(2, "meta l4proto udp fib daddr type local udp dport vmap @%s", mapAny)
	w(1, "}")
	w(1, "chain %s {", chainPost)
	w(2, "type nat hook postrouting priority srcnat; policy accept;")
	w(2, "meta l4proto udp ct status dnat ct original proto-dst @%s ip daddr . udp dport vmap @%s", setPorts, mapAff4)
	w(2, "meta l4proto udp ct status dnat ct original proto-dst @%s ip6 daddr . udp dport vmap @%s", setPorts, mapAff6)
	w(2, "meta l4proto udp ct status dnat ct original proto-dst @%s masquerade", setPorts)
	w(1, "}")
	w(0, "}")
	return b.Bytes()
}

// serviceRules are the rules of a port's chain, in nft syntax: DNAT per
// family with servers, then drop (no server: the client retries later).
func serviceRules(s Service) []string {
	var out []string
	if s.Restricted {
		out = srcRules(s)
	}
	out = append(out, stickyRules(s)...)
	pick := func(n int, saddr string) string {
		if s.Balance == model.BalanceSource {
			return fmt.Sprintf("jhash %s saddr mod %d", saddr, n)
		}
		return fmt.Sprintf("numgen inc mod %d", n)
	}
	if n := len(s.V4); n > 0 {
		out = append(out, fmt.Sprintf("meta nfproto ipv4 meta l4proto udp dnat ip to %s map @%s", pick(n, "ip"), s.Name+suffixV4))
	}
	if n := len(s.V6); n > 0 {
		out = append(out, fmt.Sprintf("meta nfproto ipv6 meta l4proto udp dnat ip6 to %s map @%s", pick(n, "ip6"), s.Name+suffixV6))
	}
	return append(out, "drop")
}

func indexed(servers []netip.AddrPort) []string {
	out := make([]string, len(servers))
	for i, s := range servers {
		out[i] = fmt.Sprintf("%d : %s . %d", i, s.Addr(), s.Port())
	}
	return out
}

// sortedNumbers sorts decimal strings by value.
func sortedNumbers(in []string) []string {
	slices.SortStableFunc(in, func(a, b string) int {
		if len(a) != len(b) {
			return len(a) - len(b)
		}
		return strings.Compare(a, b)
	})
	return in
}
