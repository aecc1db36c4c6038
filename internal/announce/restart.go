package announce

import (
	"time"
)

// A restart of the controller keeps the host's addresses (layer 2's
// graceful restart): its data plane (HAProxy, the addresses on the
// interface) runs on while the controller is replaced, so nothing should
// move. The stopping node says so in its last heartbeat (Leave: Restart,
// how long to wait for it); the others count it, for that long, the
// healthy holder of what it claimed, heard or not, and give it nothing
// new (it is fresh). The new node starts with the claims the last run
// held (Adopt, kept by the announcer) and holds them, healthy or not yet,
// until its health gate passes or the window ends; meanwhile its
// heartbeats carry those claims and the time left, so the others keep
// waiting. Once healthy it goes on as any node; if the window ends first
// it lets them go (they move, as they would have without a restart).

// Leave makes the next heartbeats ask the others to keep this host's
// claims for d (the node's last heartbeat before a restart).
func (n *Node) Leave(d time.Duration) { n.leaving = d }

// Adopt starts the node with claims held by the last run, kept until
// until while the node is not healthy (Decide changes none of them
// meanwhile). Call it before the first Decide.
func (n *Node) Adopt(claims []Claim, until time.Time) {
	for _, c := range claims {
		a := c.Addr.Unmap()
		n.claims[a] = c.Hold
		n.seen[a] = max(n.seen[a], c.Term)
	}
	if len(claims) > 0 {
		n.adoptUntil = until
	}
}

// Claims is what this host holds now and how, sorted by address (what a
// restart keeps).
func (n *Node) Claims() []Claim {
	out := make([]Claim, 0, len(n.claims))
	for _, a := range n.Holds() {
		out = append(out, Claim{Addr: a, Hold: n.claims[a]})
	}
	return out
}

// Healthy is whether the node was last told it may serve.
func (n *Node) Healthy() bool { return n.want.Healthy }

// adopting is whether, at now, the node keeps its adopted claims as they
// are: within the window and not healthy yet. Once healthy the window
// closes for good.
func (n *Node) adopting(now time.Time) bool {
	if n.adoptUntil.IsZero() {
		return false
	}
	if n.want.Healthy || !now.Before(n.adoptUntil) {
		n.adoptUntil = time.Time{}
		return false
	}
	return true
}

// restart is the Restart of the next heartbeat, in milliseconds.
func (n *Node) restart() int64 {
	d := n.leaving
	if !n.adoptUntil.IsZero() && !n.want.Healthy {
		d = max(d, n.adoptUntil.Sub(n.decided))
	}
	if d <= 0 {
		return 0
	}
	return max(d.Milliseconds(), 1)
}

// view is the peer p as Assign and Holders see it at now, and whether it
// counts (heard within the hold time, or restarting): a restarting peer
// is the healthy, fresh holder of its claims; a silent peer a live one
// still hears (vouched, hears.go) is as last heard.
func (n *Node) view(p *peer, now time.Time) (Host, bool) {
	if !n.live(p, now) && !n.vouched(p.host.ID, p, now) {
		return Host{}, false
	}
	h := p.host
	h.Fresh = h.Fresh || now.Before(p.freshUntil)
	if now.Before(p.restartUntil) {
		h.Healthy, h.Fresh = true, true
	}
	return h, true
}
