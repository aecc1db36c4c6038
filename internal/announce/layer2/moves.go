package layer2

import (
	"context"
	"maps"
	"slices"
	"time"

	"github.com/haproxy-k8s-sync/haproxy-k8s-sync/internal/announce"
)

// Holders implements announce.Reporter: the owner of each address, as
// this host hears the group, this host named where the address is on its
// interface (nil once Run has ended).
func (a *Announcer) Holders(ctx context.Context) announce.Holders { return a.holders.Ask(ctx) }

// served is the group's holders at now as the node hears them, with
// this host's own entries as its interface has them: the status never
// names this host for an address before it serves it, nor drops its name
// while it still does.
func (a *Announcer) served(now time.Time) announce.Holders {
	h := a.node.Holders(now)
	for ad, hs := range h {
		if hs = slices.DeleteFunc(hs, func(n string) bool { return n == a.cfg.ID }); len(hs) == 0 {
			delete(h, ad)
		} else {
			h[ad] = hs
		}
	}
	for _, ad := range a.work.holding() {
		h[ad] = append(h[ad], a.cfg.ID)
		slices.Sort(h[ad])
	}
	return h
}

// moved logs, on every host, each address whose owners changed since
// the last call, and why the one that had it let go (announce.Moves):
// the group's view of a failover, the same on every host that heard it.
func (a *Announcer) moved(now time.Time) {
	h := a.node.Holders(now)
	if maps.EqualFunc(h, a.known, slices.Equal) {
		return
	}
	for _, m := range announce.Moves(a.known, h, func(host string) string { return a.node.Why(host, now) }) {
		a.log.Info("address moved", "address", m.Addr, "from", m.From, "to", m.To, "why", m.Why)
		if a.cfg.OnMove != nil {
			a.cfg.OnMove(m)
		}
	}
	a.known = h
}

// late logs a step that took more than an interval (from start): the
// heartbeats waited for it, and three such in a row look like this
// host's death to the others.
func (a *Announcer) late(start time.Time) {
	if took := time.Since(start); took > a.cfg.Interval {
		a.log.Warn("a step of the announcer took longer than a heartbeat interval", "took", took.Round(time.Millisecond),
			"interval", a.cfg.Interval, "holds", len(a.node.Holds()))
	}
}
