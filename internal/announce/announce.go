// Package announce puts the addresses the load-balancer hosts serve on
// the network and moves them when a host fails. An Announcer is told the
// addresses every host of its group serves and this host's health; how it
// makes the network reach a healthy host is its own: layer 2 (ARP and
// NDP, internal/announce/layer2) elects one owner per address among the
// hosts on the address's network; BGP (internal/announce/bgp) announces
// each address from every healthy host to the routers.
//
// The layer 2 hosts agree on the owners without the apiserver: each host
// sends the others authenticated heartbeats (heartbeat.go) saying whether
// it is healthy and which addresses it holds, and every host runs the same
// pure assignment (owner.go) on what it heard (node.go), so the owner of
// an address that a failed host held is known to all within the time it
// takes to notice the failure.
package announce

import (
	"context"
	"net/netip"
	"slices"
)

// Want is what an announcer is told: the addresses the hosts serve (every
// host of the group is told the same set) and whether this host may serve
// them (its health gate: HAProxy answering, the controller ready, the
// link up).
type Want struct {
	Addrs   []netip.Addr
	Healthy bool
}

// Normal is w with its addresses unmapped, sorted and without duplicates
// or invalid ones.
func (w Want) Normal() Want {
	out := Want{Healthy: w.Healthy, Addrs: make([]netip.Addr, 0, len(w.Addrs))}
	for _, a := range w.Addrs {
		if a.IsValid() {
			out.Addrs = append(out.Addrs, a.Unmap())
		}
	}
	slices.SortFunc(out.Addrs, netip.Addr.Compare)
	out.Addrs = slices.Compact(out.Addrs)
	return out
}

// Announcer is the contract of every way of putting addresses on the
// network.
type Announcer interface {
	// Set tells the announcer what to serve now; it never blocks, and the
	// newest Want wins.
	Set(Want)
	// Run announces until ctx ends, then withdraws what it announced.
	Run(ctx context.Context) error
}

// Reporter is an announcer that says who announces each address, as
// this host knows it (Holders).
type Reporter interface {
	Holders(ctx context.Context) Holders
}

// Recorder is what an announcer reports to the metrics
// (internal/metrics.Announce).
type Recorder interface {
	// Addresses is how many addresses this host announces now.
	Addresses(n int)
	// Sessions is how many sessions with the routers are up (BGP).
	Sessions(n int)
	// Held is which addresses this host announces now, sorted.
	Held(addrs []netip.Addr)
}

// NoRecorder records nothing.
type NoRecorder struct{}

func (NoRecorder) Addresses(int)       {}
func (NoRecorder) Sessions(int)        {}
func (NoRecorder) Held(_ []netip.Addr) {}

// MoveFunc is told each change of who announces an address (Move), as
// this host sees it: every move of the group with layer 2, this host's
// own announcements with BGP. It must not block.
type MoveFunc func(Move)
