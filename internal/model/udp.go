package model

import (
	"net/netip"
	"slices"
	"time"
)

// UDPService is one UDP port of a Service, load balanced by the kernel
// (HAProxy has no UDP). It is the whole input of the nftables driver for
// that port; the HAProxy side never sees it.
type UDPService struct {
	// Name identifies the port, like a backend name: "udp_" + namespace
	// + "_" + name + "_" + port. Built from DNS labels and digits only.
	Name    string
	Service string // "namespace/name", for messages only
	// Binds are the listen addresses and port; an invalid (zero) Addr
	// means every local address of the load balancer.
	Binds   []Bind
	Balance string // BalanceRoundRobin or BalanceSource
	// Probe: the servers are nodes (InternalIP:nodePort), so the
	// driver's node health probe applies to them. Pod addresses are not
	// probed.
	Probe bool
	// SourceRanges, when not empty, are the only clients whose
	// datagrams are served; others are dropped.
	SourceRanges []netip.Prefix
	// Affinity, when set, keeps each client on the server its last new
	// flow went to until it has sent no new flow for this long
	// (ClientIP session affinity with timeoutSeconds).
	Affinity time.Duration
	Servers  []Server // sorted by Addr, then Port; never Maint
	// Weights, when set, has one entry per server: its share of new
	// flows relative to the others (a Gateway API backendRef's weight);
	// empty: every server the same. A server of weight 0 takes none.
	Weights []uint16
}

// Balance algorithms a UDPService may use.
const (
	BalanceRoundRobin = "roundrobin" // new flows go to the servers in turn
	BalanceSource     = "source"     // a hash of the client address picks the server
)

// Port is the port the service listens on.
func (u UDPService) Port() uint16 {
	if len(u.Binds) == 0 {
		return 0
	}
	return u.Binds[0].Port
}

// Equal reports whether u and v are the same, field by field.
func (u UDPService) Equal(v UDPService) bool {
	return u.Name == v.Name && u.Service == v.Service && u.Balance == v.Balance && u.Probe == v.Probe && u.Affinity == v.Affinity &&
		slices.Equal(u.Binds, v.Binds) && slices.Equal(u.SourceRanges, v.SourceRanges) && slices.Equal(u.Servers, v.Servers) &&
		slices.Equal(u.Weights, v.Weights)
}
