package announce

import (
	"errors"
	"maps"
	"net/netip"
	"slices"
	"strings"
	"time"
)

// Node is one host's side of the agreement, pure: it is told what to
// serve (Set), what the others said (Receive) and the time, and answers
// which addresses this host holds now (Decide) and what to tell the
// others (Heartbeat). It keeps no timers and opens nothing; the
// announcer around it does.
type Node struct {
	id         string
	hold       time.Duration
	start      time.Time
	epoch, seq uint64
	want       Want
	wanted     map[netip.Addr]bool
	peers      map[string]*peer
	claims     map[netip.Addr]Hold // what this host holds
	maxHolds   int
	seen       map[netip.Addr]uint64 // the highest term heard of each address
	// the hold-down (holddown.go): until freshUntil this host is fresh
	// (started, healthy again or heard its peers again lately) and is
	// given no free address while a steady host is there
	holdDown   time.Duration
	freshUntil time.Time
	fresh      bool // at the last Decide
	returned   bool // healthy again since the last Decide
	// until listenUntil this host, healthy again, takes no address it
	// heard no peer claim (claimedAt, a heartbeat's arrival) since its
	// health fell (fellAt; down: unhealthy at the last Decide): it first
	// hears what the others took meanwhile (holddown.go)
	listenUntil, fellAt time.Time
	down                bool
	claimedAt           map[netip.Addr]time.Time
	// a restart (restart.go): the claims adopted from the last run are
	// kept until adoptUntil while this host is not healthy yet; leaving
	// asks the others to keep this host's claims that long
	adoptUntil time.Time
	leaving    time.Duration
	decided    time.Time // the last Decide's now
	// returnedPeer: a peer heard again after its silence since the last
	// Decide (Change.Again)
	returnedPeer bool
	// a stall (deaf.go): what the next heartbeats say of it, and how
	// each hold's support was lowered
	deafSay   time.Duration
	deafBeats int
	lows      map[netip.Addr]*low
	// waiting: the last Decide put off a taking for a witness's word
	// (hears.go); the next heartbeat heard decides again at once
	waiting bool
	// this host's own stalls lately (stalls.go)
	stalls stalls
}

type peer struct {
	epoch, seq uint64
	at         time.Time
	host       Host
	// until when this node counts the peer fresh on its own account (it
	// heard it again after its silence)
	freshUntil time.Time
	// until when the peer restarts: it holds its claims, heard or not
	restartUntil time.Time
	// since when it was heard with no gap longer than half the hold time
	// (a silence as support() counts them: a cut that healed within the
	// hold time is one too)
	since time.Time
	// the longest stall the peer told of (Heartbeat.Stall; stalls.go),
	// or this node's own since it last heard the peer, if longer (Deaf)
	stall time.Duration
	// the peers its last heartbeat says it hears (hears.go; nil: none,
	// or an older version)
	hears map[string]Heard
}

// MaxHolds is the most addresses one host holds: its heartbeat must fit
// in one datagram (MaxHeartbeat: about 850 IPv6 or 1,300 IPv4 claims).
// A host at the limit takes no more (Change.Unserved counts those it was
// given): it never falls silent, which would look like its death.
const MaxHolds = 800

// Errors of Receive, for errors.Is.
var (
	ErrReplay = errors.New("heartbeat: not newer than the last one of its host (a replay)")
	ErrSelf   = errors.New("heartbeat: carries this host's own name")
)

// NewNode is host id starting at now. A host not heard from for hold is
// gone; for that long after its start a node takes no free address, and
// after its health returns none it heard no peer claim since it fell (it
// first hears what the others hold: holddown.go).
func NewNode(id string, hold time.Duration, now time.Time) *Node {
	return &Node{id: id, hold: hold, start: now, epoch: uint64(now.UnixNano()), maxHolds: MaxHolds,
		wanted: map[netip.Addr]bool{}, peers: map[string]*peer{},
		claims: map[netip.Addr]Hold{}, seen: map[netip.Addr]uint64{}, lows: map[netip.Addr]*low{},
		claimedAt: map[netip.Addr]time.Time{}}
}

// Set is what the host should serve now.
func (n *Node) Set(w Want) {
	n.returned = n.returned || w.Healthy && !n.want.Healthy
	n.want = w.Normal()
	clear(n.wanted)
	for _, a := range n.want.Addrs {
		n.wanted[a] = true
	}
	maps.DeleteFunc(n.claimedAt, func(a netip.Addr, _ time.Time) bool { return !n.wanted[a] })
}

// Receive takes a peer's heartbeat heard at now (already opened: its MAC
// checked). It reports whether the heartbeat changed what the node knows
// of the group (a new host, health or claims), in which case the caller
// decides again at once rather than at its next tick.
func (n *Node) Receive(hb Heartbeat, now time.Time) (changed bool, err error) {
	if hb.Host == n.id {
		return false, ErrSelf
	}
	p := n.peers[hb.Host]
	if p != nil && (hb.Epoch < p.epoch || hb.Epoch == p.epoch && hb.Seq <= p.seq) {
		return false, ErrReplay
	}
	n.heardAgain(p, now)
	n.forgive(hb.Host, p, hb, now)
	n.returnedPeer = n.returnedPeer || p != nil && !n.live(p, now)
	h := Host{ID: hb.Host, Healthy: hb.Healthy, Fresh: hb.Fresh, Claims: make(map[netip.Addr]Hold, len(hb.Claims))}
	for _, c := range hb.Claims {
		a := c.Addr.Unmap()
		h.Claims[a] = c.Hold
		n.seen[a] = max(n.seen[a], c.Term)
		n.claimedAt[a] = now
	}
	hears := hearsMap(hb.Hears)
	changed = p == nil || !n.live(p, now) || p.host.Healthy != h.Healthy || !sameClaims(p.host.Claims, h.Claims) ||
		!sameHeard(p.hears, hears)
	until, since := time.Time{}, now
	if p != nil {
		until = p.freshUntil
		if now.Sub(p.at) <= n.hold/2 {
			since = p.since
		}
	}
	np := &peer{epoch: hb.Epoch, seq: hb.Seq, at: now, host: h, freshUntil: until, since: since, hears: hears,
		stall: peerStall(hb.Stall)}
	if hb.Restart > 0 {
		np.restartUntil = now.Add(time.Duration(hb.Restart) * time.Millisecond)
	}
	n.peers[hb.Host] = np
	return changed || n.waiting, nil
}

func (n *Node) live(p *peer, now time.Time) bool {
	return now.Sub(p.at) <= n.holdOf(p) || now.Before(p.restartUntil)
}

func sameClaims(a, b map[netip.Addr]Hold) bool {
	if len(a) != len(b) {
		return false
	}
	for k, v := range a {
		if w, ok := b[k]; !ok || w != v {
			return false
		}
	}
	return true
}

// Change is what Decide changed: addresses taken and let go, and how
// many this host was given but could not take (MaxHolds). Again are
// addresses this host keeps that the neighbours may have heard another
// host announce last, so it announces them again: a live peer claims
// them too, or a peer was heard again after its silence (a partition
// healed: the host that was cut off took every address and announced
// it, and lets go when it hears this host, perhaps before its claim
// reached this host).
type Change struct {
	Take, Release []netip.Addr
	Unserved      int
	Again         []netip.Addr
}

// Empty is whether nothing changed.
func (c Change) Empty() bool { return len(c.Take) == 0 && len(c.Release) == 0 }

// Decide works out, at now, which addresses this host holds (Assign over
// itself and the peers heard within the hold time) and returns what
// changed. An unhealthy host holds nothing.
func (n *Node) Decide(now time.Time) Change {
	var ch Change
	n.decideFresh(now)
	n.decided = now
	n.stalls.roll(now)
	if n.adopting(now) {
		return ch
	}
	if !n.want.Healthy {
		for a := range n.claims {
			ch.Release = append(ch.Release, a)
		}
		clear(n.claims)
		return sorted(ch)
	}
	for a := range n.claims {
		if !n.wanted[a] {
			ch.Release = append(ch.Release, a)
			delete(n.claims, a)
		}
	}
	hosts := []Host{{ID: n.id, Healthy: true, Fresh: n.fresh, Claims: n.claims}}
	for _, p := range n.peers {
		if h, ok := n.view(p, now); ok {
			hosts = append(hosts, h)
		}
	}
	// map order must not matter: Assign is given the hosts by name
	slices.SortFunc(hosts[1:], func(a, b Host) int { return strings.Compare(a.ID, b.ID) })
	n.markCut(hosts, now)
	// a hold's support only falls: a host cut off from the others keeps
	// what it holds, but loses it to the side that heard more once the
	// partition heals (a peer's own stall is forgiven: deaf.go)
	silent := n.lower(len(hosts), now)
	owners := Assign(n.want.Addrs, hosts, n.seen)
	again := n.returnedPeer
	n.returnedPeer = false
	starting := now.Sub(n.start) < n.hold
	n.waiting = false
	for _, a := range n.want.Addrs {
		o, ok := owners[a]
		_, held := n.claims[a]
		settling := starting || n.listens(a, now)
		switch {
		case held && (!ok || o.Host != n.id):
			ch.Release = append(ch.Release, a)
			delete(n.claims, a)
		case held && (again || contested(a, hosts[1:])):
			ch.Again = append(ch.Again, a)
		case !held && ok && o.Host == n.id && !settling && len(n.claims) >= n.maxHolds:
			ch.Unserved++
		case !held && ok && o.Host == n.id && !settling && n.awaits(a, now):
			n.waiting = true
		case !held && ok && o.Host == n.id && !settling:
			o.Support = n.support(a, o.Support, now)
			n.claims[a] = o.Hold
			n.taken(a, o.Hold, len(hosts), silent, now)
			n.seen[a] = max(n.seen[a], o.Term)
			ch.Take = append(ch.Take, a)
		}
	}
	return sorted(ch)
}

// support is the support of a taking of a at now, at most most: when a
// peer silent now held a, only the peers heard well after its last
// heartbeat (half the hold time), and with no gap as long since before
// it, count beside this host. A peer heard last about when the holder
// was is as likely cut off with it: a host that is itself being cut off
// hears its peers fall silent one by one,
// and must not take the first one's addresses with the support of the
// others (it would keep them against their holder when the cut heals
// before it noticed the rest). And a peer heard again after a gap is as
// likely on the other side of a cut that just healed: this host, cut
// off, hears its peers again one by one, and must not take the addresses
// of the one still to come with the support of the first
// (TestNodeHealHeardOneByOne). And a peer that heard the holder after
// this host last did (its heartbeat's Hears) does not count: the holder
// is alive on its side (hears.go; such a holder is vouched for and
// stays in the view, so this counts only a peer heard by restart).
func (n *Node) support(a netip.Addr, most int, now time.Time) int {
	goneID, gone := n.lastHolder(a, now)
	if gone == nil {
		return most
	}
	k := 1
	for _, p := range n.peers {
		if n.live(p, now) && p.at.Sub(gone.at) > n.hold/2 && !p.since.After(gone.at) && !hearsAfter(p, goneID, gone) {
			k++
		}
	}
	return min(k, most)
}

// contested is whether one of peers claims a.
func contested(a netip.Addr, peers []Host) bool {
	for _, p := range peers {
		if _, ok := p.Claims[a]; ok {
			return true
		}
	}
	return false
}

func sorted(c Change) Change {
	slices.SortFunc(c.Take, netip.Addr.Compare)
	slices.SortFunc(c.Release, netip.Addr.Compare)
	return c
}

// Holds is what this host holds now, sorted.
func (n *Node) Holds() []netip.Addr {
	out := make([]netip.Addr, 0, len(n.claims))
	for a := range n.claims {
		out = append(out, a)
	}
	slices.SortFunc(out, netip.Addr.Compare)
	return out
}

// Heartbeat is the next heartbeat to send (each call a new sequence
// number).
func (n *Node) Heartbeat() Heartbeat {
	n.seq++
	hb := Heartbeat{Host: n.id, Epoch: n.epoch, Seq: n.seq, Healthy: n.want.Healthy, Fresh: n.fresh, Restart: n.restart(), Deaf: n.deaf(),
		Stall: n.stallMs(), Hears: n.hears()}
	for _, a := range n.Holds() {
		hb.Claims = append(hb.Claims, Claim{Addr: a, Hold: n.claims[a]})
	}
	return hb
}

// Peers is how many peers were heard within the hold time at now.
func (n *Node) Peers(now time.Time) int {
	k := 0
	for _, p := range n.peers {
		if n.live(p, now) {
			k++
		}
	}
	return k
}

// Due is whether a Decide at now could differ from the last one by the
// passing of time alone: a peer live then is silent now, or its restart
// ended (a cheap check, for an announcer that watches for silence more
// often than it decides).
func (n *Node) Due(now time.Time) bool {
	for _, p := range n.peers {
		if n.live(p, n.decided) != n.live(p, now) || n.decided.Before(p.restartUntil) != now.Before(p.restartUntil) {
			return true
		}
	}
	return false
}
