package announce

import "time"

// Deaf tells the node that this host heard nothing for d up to now
// through no fault of its peers: its own loop did not run (its process
// was not scheduled, its machine paused). A peer's silence is counted
// only while this host listened, so the span is added to the time each
// peer was last heard: a peer heard just before the stall is not taken
// for dead at the first decision after it, before its next heartbeat
// (queued meanwhile, or sent as soon as its own stalled process runs)
// is read. A peer that really died is found so at most d later.
func (n *Node) Deaf(d time.Duration) {
	if d <= 0 {
		return
	}
	for _, p := range n.peers {
		p.at = p.at.Add(d)
	}
}
