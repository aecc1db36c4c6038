package announce

import (
	"net/netip"
	"slices"
	"strings"
	"time"
)

// A cut between two hosts while a third hears both (issue 31): each of
// the two stops hearing the other, and without more it would count the
// third as support and take the other's addresses, which the other
// keeps: two holders for the whole cut. So each heartbeat names the
// peers its sender hears (Heartbeat.Hears: heard within the hold time
// and healthy, with the newest heartbeat it took from each), and a peer
// silent to this host that a live peer heard after this host last did
// (a newer epoch or sequence number: no clocks compared) is alive, only
// cut off from this host: it stays in this host's view as last heard
// (vouched), keeps its addresses, and is given nothing new by the others
// that it would not be given by them. When that peer really fails, its
// witnesses stop naming it within their own hold time and the next
// heartbeat says so; when all heard its last heartbeat alike (a host
// frozen or dead), nobody vouches and the failover is as fast as before.
// A peer that sends no list (an older version) vouches for nobody and
// counts as support as it did. Two hosts alone have no witness: a cut
// between them is a failure to each, and both hold until it heals
// (docs/addresses.md).

// Heard is a peer the sender of a heartbeat hears: the newest heartbeat
// it took from it.
type Heard struct {
	Host  string `json:"host"`
	Epoch uint64 `json:"epoch"`
	Seq   uint64 `json:"seq"`
}

// MaxHears is the most peers a heartbeat names (a group is a few
// hosts); Seal names fewer when the claims leave too little room.
const MaxHears = 32

// hears is the Hears of the next heartbeat: the healthy peers heard
// within the hold time at the last Decide, by name.
func (n *Node) hears() []Heard {
	var out []Heard
	for id, p := range n.peers {
		if n.decided.Sub(p.at) <= n.hold && p.host.Healthy {
			out = append(out, Heard{Host: id, Epoch: p.epoch, Seq: p.seq})
		}
	}
	slices.SortFunc(out, func(a, b Heard) int { return strings.Compare(a.Host, b.Host) })
	if len(out) > MaxHears {
		out = out[:MaxHears]
	}
	return out
}

// hearsAfter is whether peer q's last heartbeat says it heard peer g
// (named id) after this host last did.
func hearsAfter(q *peer, id string, g *peer) bool {
	h, ok := q.hears[id]
	return ok && (h.Epoch > g.epoch || h.Epoch == g.epoch && h.Seq > g.seq)
}

// vouched is whether peer g (named id), silent to this host at now, is
// heard by a live peer after this host last heard it.
func (n *Node) vouched(id string, g *peer, now time.Time) bool {
	for qid, q := range n.peers {
		if qid != id && now.Sub(q.at) <= n.hold && hearsAfter(q, id, g) {
			return true
		}
	}
	return false
}

// hearsMap is a heartbeat's Hears by name (nil for none: an older
// sender).
func hearsMap(hs []Heard) map[string]Heard {
	if len(hs) == 0 {
		return nil
	}
	m := make(map[string]Heard, len(hs))
	for _, h := range hs {
		m[h.Host] = h
	}
	return m
}

// sameHeard is whether two heartbeats name the same peers.
func sameHeard(a, b map[string]Heard) bool {
	if len(a) != len(b) {
		return false
	}
	for k := range a {
		if _, ok := b[k]; !ok {
			return false
		}
	}
	return true
}

// lastHolder is the peer silent at now (and its name) that claimed a,
// heard last of those; nil for none.
func (n *Node) lastHolder(a netip.Addr, now time.Time) (string, *peer) {
	var gone *peer
	goneID := ""
	for id, p := range n.peers {
		if _, ok := p.host.Claims[a]; ok && !n.live(p, now) && (gone == nil || p.at.After(gone.at)) {
			gone, goneID = p, id
		}
	}
	return goneID, gone
}

// awaits is whether a taking of a at now waits for a witness: a peer
// heard within the hold time (not one merely restarting, which may be
// gone for long) that names the peers it hears was last heard no later
// than half a hold time after the silent holder's last heartbeat, so its
// word on the holder (still heard on its side, or silent there too) is
// not in yet. Its next heartbeat settles it, or its own silence (a host
// being cut off hears its peers fall silent one by one). Without the
// wait, a witness's heartbeat late by less than an interval (a loaded
// machine) let the taking through, and two hosts held the address
// until it came (TestNodeAwaitsLateWitness).
func (n *Node) awaits(a netip.Addr, now time.Time) bool {
	_, gone := n.lastHolder(a, now)
	if gone == nil {
		return false
	}
	for _, p := range n.peers {
		if p != gone && p.hears != nil && now.Sub(p.at) <= n.hold && !p.at.After(gone.at.Add(n.hold/2)) {
			return true
		}
	}
	return false
}
