package announce

import (
	"net/netip"
	"time"
)

// The hold-down against a flapping host: a host is fresh for the
// hold-down after it started, after its health gate passed again, and
// after it heard its peers again once it had heard none (it was cut
// off); and, in each other host's view, after that host heard it again
// following its silence. Assign gives a fresh host no free address while
// a steady one is healthy, so a host whose gate or link flaps is handed
// nothing it could lose at its next flap: an address moves at most once
// per flap of its owner, to a steady host, and never back. A fresh host
// keeps what it holds; with no steady host (the group starting, or a
// two-host group healing) the fresh ones are used as before. Each host
// says whether it is fresh in its heartbeats, so all hosts see the same.
//
// A host whose health returns (its gate passes again, its link has its
// carrier again) listens for one hold time before it takes an address
// it heard no peer claim since its health fell, as a starting host
// listens before it takes anything: it released everything while
// unhealthy, and what the others took meanwhile it may not have heard
// yet (its link was down, or their takings' heartbeats are still to
// come). With a view that old it would take the addresses back at once,
// with the same term as their new owner and as much support or more
// (the new owner counts fewer beside the silent holder), and could keep
// them: back to the host that flapped (TestLinkDown in layer2). An
// address it heard claimed since it fell it knows the holder of, and
// takes at once when that holder lets it go and Assign gives it this
// host: the others, not knowing it listens, may (no steady host but
// it), and a failover right after its return waits for nothing
// (`make failover`'s back-to-back trials). It keeps what it holds
// meanwhile (a restart's adopted claims).

// HoldDown sets how long a host stays fresh (0, the default of NewNode:
// never fresh, no hold-down); it counts from the node's start too.
func (n *Node) HoldDown(d time.Duration) {
	n.holdDown = d
	n.freshUntil = n.start.Add(d)
}

// decideFresh brings the node's own freshness up to now, notes when its
// health fell, and starts the listening of a host healthy again (not of
// one healthy from its first Decide: its start's hold time is that
// listening).
func (n *Node) decideFresh(now time.Time) {
	if !n.want.Healthy && !n.down {
		n.fellAt = now
	}
	n.down = !n.want.Healthy
	if n.returned {
		n.returned = false
		n.freshUntil = now.Add(n.holdDown)
		if !n.decided.IsZero() {
			n.listenUntil = now.Add(n.hold)
		}
	}
	n.fresh = now.Before(n.freshUntil)
}

// heardAgain notes a heartbeat of p (nil: never heard before) at now,
// after p's silence: if this node had heard none of its peers for the
// hold time, it was the one cut off (as a frozen host is) and is fresh
// itself; otherwise p is fresh in this node's view. (A two-host group
// healing: each is fresh by its own account, and says so.)
func (n *Node) heardAgain(p *peer, now time.Time) {
	switch {
	case p == nil || n.live(p, now) || n.holdDown <= 0 || n.vouched(p.host.ID, p, now):
	case n.Peers(now) == 0:
		n.freshUntil = now.Add(n.holdDown)
	default:
		p.freshUntil = now.Add(n.holdDown)
	}
}

// listens is whether this host, healthy again, still listens at now
// before it takes a: within one hold time of its return, and no peer
// was heard claiming a since its health fell.
func (n *Node) listens(a netip.Addr, now time.Time) bool {
	return now.Before(n.listenUntil) && !n.claimedAt[a].After(n.fellAt)
}
