package announce

import "time"

// A host's own stalls, told to its peers (Heartbeat.Stall) so that they
// allow for them before they count its silence as its death.
//
// A host whose loop is not scheduled for a while (a loaded node, its
// process starved of CPU, a paused VM) sends nothing meanwhile; to its
// peers that silence looks like a frozen or dead host, and a stall
// longer than the hold time moved its addresses (the 10-minute apiserver
// outage in real Pods on a loaded machine: 250-450 ms stalls against the
// default 300 ms hold). Deaf forgives the stalled host's own deafness;
// this forgives its silence, in the measure it has shown: each heartbeat
// carries the longest stall its sender had within StallMemory, and a
// receiver counts that peer silent only after
//
//	max(hold, stall*3/2 + hold/3)
//
// (the heartbeats stop up to an interval before a stall and resume
// after it; half the stall again is room for a longer one), at most
// MaxStallHold. A host that never stalled is held to the hold time, so
// the failover bound of a frozen or dead host is unchanged where hosts
// run on time; a host that does stall is failed over after its own
// stalls' measure instead of being taken for dead at each of them.
const (
	// StallMemory is how long a stall is remembered and told.
	StallMemory = 10 * time.Minute
	// MaxStallHold bounds a peer's silence allowed for its stalls.
	MaxStallHold = 2 * time.Second
)

// stalls keeps the longest stall of two halves of StallMemory: the
// current half and the last; the longest of both is told.
type stalls struct {
	since     time.Time // the current half's start
	cur, prev time.Duration
}

// Stalled tells the node that its loop did not run for gap, ending at
// now (the announcer's own measure: the time between two runs of its
// loop, when longer than an interval).
func (n *Node) Stalled(gap time.Duration, now time.Time) {
	n.stalls.roll(now)
	n.stalls.cur = max(n.stalls.cur, gap)
}

func (s *stalls) roll(now time.Time) {
	switch half := StallMemory / 2; {
	case s.since.IsZero():
		s.since = now
	case now.Sub(s.since) >= 2*half:
		s.since, s.cur, s.prev = now, 0, 0
	case now.Sub(s.since) >= half:
		s.since, s.prev, s.cur = s.since.Add(half), s.cur, 0
	}
}

// Stall is the longest stall of this host within StallMemory at now.
func (n *Node) Stall(now time.Time) time.Duration {
	n.stalls.roll(now)
	return max(n.stalls.cur, n.stalls.prev)
}

// stallMs is the Stall of the next heartbeat, in milliseconds (0:
// none), as of the last Decide (which rolls the halves on).
func (n *Node) stallMs() int64 {
	return max(n.stalls.cur, n.stalls.prev).Milliseconds()
}

// holdOf is how long peer p may be silent before it is gone: the hold
// time, or longer for a peer that told of its stalls.
func (n *Node) holdOf(p *peer) time.Duration {
	if p.stall <= 0 {
		return n.hold
	}
	return AllowedSilence(n.hold, p.stall)
}

// AllowedSilence is how long a peer that told of a stall may be silent
// before it is gone, for a hold time hold.
func AllowedSilence(hold, stall time.Duration) time.Duration {
	return min(max(hold, stall*3/2+hold/3), max(hold, MaxStallHold))
}

// peerStall is a heartbeat's Stall as a duration, bounded.
func peerStall(ms int64) time.Duration {
	if ms <= 0 {
		return 0
	}
	return time.Duration(min(ms, MaxStallHold.Milliseconds())) * time.Millisecond
}

// StallHold is how long peer id may be silent before it is gone, at its
// last heartbeat (the hold time for an unknown peer).
func (n *Node) StallHold(id string) time.Duration {
	if p := n.peers[id]; p != nil {
		return n.holdOf(p)
	}
	return n.hold
}
