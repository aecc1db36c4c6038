package announce

import "time"

// A new address during a cut (docs/addresses.md). While lb1 and lb2 are
// cut from each other and lb3 hears both, each of the two keeps the
// other in its view as last heard (vouched, hears.go): an address lb2
// took during the cut is free in lb1's view, and the two may give a new
// address each to itself (seen when addresses appear one at a time out
// of order: TestNodeCutWithWitness). So a host cut from a peer is given
// no free address while a host that is not is healthy and steady:
// Decide marks such hosts fresh for Assign (Host.Fresh: a free address
// only when no steady host is healthy). This host is cut when a peer of
// its view is only vouched for; a peer is, when its last heartbeat does
// not name a healthy peer of this host's view that this host heard
// with no gap for a hold time before that heartbeat (the peer would
// have heard it too). lb3, hearing both, finds lb1 and lb2 cut and
// takes a new address itself; lb1 and lb2 each find themselves cut and
// take none. Every host that is not cut names every peer, so nothing
// changes outside a cut, nor when a host fails (it leaves the views).

// markCut marks fresh the hosts of hosts (this host first, then its view
// of its peers) that are cut from a peer of the view.
func (n *Node) markCut(hosts []Host, now time.Time) {
	for i := range hosts {
		if hosts[i].Healthy && !hosts[i].Fresh && n.cut(hosts[i].ID, hosts, now) {
			hosts[i].Fresh = true
		}
	}
}

// cut is whether host id of hosts is cut from a healthy peer of hosts.
func (n *Node) cut(id string, hosts []Host, now time.Time) bool {
	if id == n.id {
		for _, h := range hosts[1:] {
			if p := n.peers[h.ID]; p != nil && h.Healthy && !n.live(p, now) {
				return true
			}
		}
		return false
	}
	p := n.peers[id]
	if p == nil || p.hears == nil {
		return false
	}
	for _, h := range hosts[1:] {
		q := n.peers[h.ID]
		if h.ID == id || !h.Healthy || q == nil {
			continue
		}
		if _, named := p.hears[h.ID]; !named && !q.since.After(p.at.Add(-n.hold)) {
			return true
		}
	}
	return false
}
