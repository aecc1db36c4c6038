package announce

import (
	"maps"
	"net/netip"
	"time"
)

// Deaf tells the node that this host heard nothing for d up to now
// through no fault of its peers: its own loop did not run (its process
// was not scheduled, its machine paused). A peer's silence is counted
// only while this host listened, so the span is added to the time each
// peer was last heard: a peer heard just before the stall is not taken
// for dead at the first decision after it, before its next heartbeat
// (queued meanwhile, or sent as soon as its own stalled process runs)
// is read. A peer that really died is found so at most d later, and
// later again by the allowance below.
//
// Until it is heard again, each peer is also allowed the silence of a
// peer that told a stall of d (AllowedSilence): this host's stall says
// something here stalls (a loaded machine, a paused hypervisor), and
// hosts starved together are scheduled again one by one, not at once. A
// peer back a few hundred milliseconds after this host is not taken for
// dead (TestNodeDeaf; layer2.TestStalledProcessMovesNothing continues
// one of three stopped hosts 300 ms after the others: 4-13 moves at the
// first stop with the hold time alone, which allowed a peer as little
// as ~175 ms after this host's return). Only this host
// waits longer for a peer that really died in its stall; its peers that
// did not stall find it on time.
//
// The next deafBeats heartbeats say so too (Heartbeat.Deaf): the peers
// heard nothing from this host for as long, and a peer that lowered its
// holds' support for that silence raises it again (forgive): the stall
// was this host's, not a cut between them. Without it, a peer that heard
// no other host while this one stalled would keep support 1 and lose its
// own addresses, at a partition's heal, to a host cut off meanwhile that
// took them with support 1 and a newer term.
func (n *Node) Deaf(d time.Duration) {
	if d <= 0 {
		return
	}
	for _, p := range n.peers {
		p.at = p.at.Add(d)
		p.stall = max(p.stall, peerStall(d.Milliseconds()))
	}
	if n.deafBeats == 0 {
		n.deafSay = 0
	}
	n.deafSay += d
	n.deafBeats = deafBeats
}

// deafBeats is how many heartbeats after a stall say it (one may be lost).
const deafBeats = 3

// deaf is the Deaf of the next heartbeat, in milliseconds.
func (n *Node) deaf() int64 {
	if n.deafBeats == 0 {
		return 0
	}
	n.deafBeats--
	return max(n.deafSay.Milliseconds(), 1)
}

// low is what a hold's support was lowered for: took is the support at
// its taking (forgiving raises it no higher), silent the peers silent at
// every decision that saw the hold at its lowest support so far (nil:
// none, or not known), since the first of those decisions.
type low struct {
	took   int
	silent map[string]bool
	since  time.Time
}

// lower brings the support of this host's holds down to the hosts heard
// at this decision (hosts of them), noting which peers were silent, and
// returns those.
func (n *Node) lower(hosts int, now time.Time) map[string]bool {
	silent := map[string]bool{}
	for id, p := range n.peers {
		if _, ok := n.view(p, now); !ok {
			silent[id] = true
		}
	}
	for a := range n.lows {
		if _, ok := n.claims[a]; !ok {
			delete(n.lows, a)
		}
	}
	for a, c := range n.claims {
		l := n.lows[a]
		if l == nil {
			l = &low{took: c.Support}
			n.lows[a] = l
		}
		switch {
		case hosts < c.Support:
			c.Support = hosts
			n.claims[a] = c
			l.silent, l.since = maps.Clone(silent), now
		case hosts == c.Support:
			maps.DeleteFunc(l.silent, func(id string, _ bool) bool { return !silent[id] })
		}
	}
	return silent
}

// forgive takes back what peer p's silence took from the support of
// this host's holds when p says (hb.Deaf) that it stalled for as long,
// give or take the hold time, up to now: one more, up to the support at
// the taking, where p was silent at each decision that saw the lowest
// and those came after p was last heard (a silence of p before that
// may have been a cut, and stays counted).
func (n *Node) forgive(id string, p *peer, hb Heartbeat, now time.Time) {
	// a stall longer than an hour is none we heed (and overflows nothing)
	if p == nil || hb.Deaf <= 0 || hb.Deaf > time.Hour.Milliseconds() ||
		now.Sub(p.at) > time.Duration(hb.Deaf)*time.Millisecond+n.hold {
		return
	}
	for a, l := range n.lows {
		c, ok := n.claims[a]
		if !ok || !l.silent[id] || l.since.Before(p.at) {
			continue
		}
		delete(l.silent, id)
		c.Support = min(l.took, c.Support+1)
		n.claims[a] = c
	}
}

// taken starts the bookkeeping of a hold taken at this decision: when
// its support counts every host heard now, the silent peers are those
// silent now; when fewer (Node.support), none is forgiven.
func (n *Node) taken(a netip.Addr, h Hold, hosts int, silent map[string]bool, now time.Time) {
	l := &low{took: h.Support, since: now}
	if h.Support == hosts {
		l.silent = maps.Clone(silent)
	}
	n.lows[a] = l
}
