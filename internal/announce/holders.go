package announce

import (
	"net/netip"
	"slices"
	"strings"
	"time"
)

// Holders is who announces each address, as one host knows it, the
// names sorted: with layer 2 the owner (one host; two for the moment a
// partition heals), as every host of the group hears it; with BGP this
// host alone, for the addresses it announces (the speakers do not hear
// each other). An address nobody announces is not in it.
type Holders map[netip.Addr][]string

// Why a holder of an address let it go (Move.Why).
const (
	WhySilent    = "silent"    // no heartbeat within the hold time: dead, frozen or cut off
	WhyUnhealthy = "unhealthy" // its health gate failed, or it stopped
	WhyReleased  = "released"  // alive and healthy, it let go (another host won it, or it left the model)
	WhyNew       = "new"       // nobody held it before
)

// Move is a change of an address's holders, and why the first one that
// left did (Why*; WhyNew when nobody held it).
type Move struct {
	Addr     netip.Addr
	From, To []string
	Why      string
}

// Moves are the addresses whose holders differ from before to after,
// sorted by address; why says why a host that held an address no longer
// does.
func Moves(before, after Holders, why func(host string) string) []Move {
	var out []Move
	seen := map[netip.Addr]bool{}
	for _, hs := range []Holders{before, after} {
		for a := range hs {
			if seen[a] || slices.Equal(before[a], after[a]) {
				continue
			}
			seen[a] = true
			m := Move{Addr: a, From: before[a], To: after[a], Why: WhyNew}
			for _, h := range m.From {
				if !slices.Contains(m.To, h) {
					m.Why = why(h)
					break
				}
			}
			out = append(out, m)
		}
	}
	slices.SortFunc(out, func(x, y Move) int { return x.Addr.Compare(y.Addr) })
	return out
}

// Holders is who holds each address at now, as this node heard: its own
// claims and those of the peers heard within the hold time that are
// healthy.
func (n *Node) Holders(now time.Time) Holders {
	out := Holders{}
	for a := range n.claims {
		out[a] = append(out[a], n.id)
	}
	for _, p := range n.peers {
		h, ok := n.view(p, now)
		if !ok || !h.Healthy {
			continue
		}
		for a := range h.Claims {
			out[a] = append(out[a], h.ID)
		}
	}
	for a := range out {
		slices.SortFunc(out[a], strings.Compare)
	}
	return out
}

// Why is why host holds nothing now, as this node knows it (Why*).
func (n *Node) Why(host string, now time.Time) string {
	if host == n.id {
		if !n.want.Healthy {
			return WhyUnhealthy
		}
		return WhyReleased
	}
	p := n.peers[host]
	switch {
	case p == nil || !n.live(p, now):
		return WhySilent
	case !p.host.Healthy:
		return WhyUnhealthy
	}
	return WhyReleased
}

// Message is the move said in one line, for an Event and a log line:
// where the address went, and why it left the host that had it.
func (m Move) Message() string {
	from, to := strings.Join(m.From, ", "), strings.Join(m.To, ", ")
	switch {
	case len(m.From) == 0:
		return m.Addr.String() + " announced by " + to
	case len(m.To) == 0:
		return m.Addr.String() + " no longer announced: " + from + " " + m.Why
	case m.Why == WhyNew:
		return m.Addr.String() + " announced by " + to + " (was " + from + ")"
	}
	return m.Addr.String() + " moved from " + from + " to " + to + ": " + m.From[0] + " " + m.Why
}
