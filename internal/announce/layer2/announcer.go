// Package layer2 is the ARP/NDP announcer: the hosts of a group agree
// which one owns each address (announce.Node, over UDP heartbeats sealed
// with the group's key), and the owner puts the address on its interface
// and tells the segment (gratuitous ARP, unsolicited neighbour
// advertisements). The others never have it on an interface, so they
// never answer for it (with arp_ignore=1 and arp_announce=2 on the
// interface: docs/addresses.md).
package layer2

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/netip"
	"slices"
	"time"

	"github.com/haproxy-k8s-sync/haproxy-k8s-sync/internal/announce"
)

// Defaults of Config.
const (
	DefaultPort     = 7947
	DefaultInterval = 100 * time.Millisecond
	DefaultMisses   = 3
	DefaultLifetime = 5 * time.Second
	DefaultRefresh  = 10 * time.Second
	DefaultHoldDown = 10 * time.Second
)

// Config is one host's announcer.
type Config struct {
	ID        string         // this host's name in the group (unique)
	Interface string         // where the addresses go
	Listen    netip.AddrPort // heartbeats are read here (default [::]:DefaultPort)
	Peers     []netip.AddrPort
	Key       []byte // the group's shared key (HMAC-SHA256)
	// Interval between heartbeats; a host missing Misses in a row is
	// gone (the hold time).
	Interval time.Duration
	Misses   int
	// Lifetime of an address on the interface (whole seconds), renewed
	// every third of it: the address of an agent that stopped lapses
	// after at most this long.
	Lifetime time.Duration
	// Repeats: gratuitous ARPs/advertisements after the first, one per
	// interval, when an address is taken; then one every Refresh.
	Repeats int
	Refresh time.Duration
	// HoldDown: a host that started, became healthy again or was cut
	// off and heard again is given no free address for this long while
	// a steady host is there (announce.Node.HoldDown: a flapping host
	// has nothing to lose at its next flap). 0: DefaultHoldDown;
	// negative: none.
	HoldDown time.Duration
	Logger   *slog.Logger
	// Metrics, when set, is told which addresses this host holds.
	Metrics announce.Recorder
	// OnMove, when set, is told every change of an address's owner this
	// host hears (announce.Moves; the Events of the Services).
	OnMove announce.MoveFunc
}

func (c *Config) defaults() error {
	if c.ID == "" || c.Interface == "" || len(c.Key) == 0 {
		return errors.New("layer2: the host's name, the interface and the group's key are required")
	}
	if !c.Listen.IsValid() {
		c.Listen = netip.AddrPortFrom(netip.IPv6Unspecified(), DefaultPort)
	}
	if c.Interval <= 0 {
		c.Interval = DefaultInterval
	}
	if c.Misses <= 0 {
		c.Misses = DefaultMisses
	}
	if c.Lifetime < time.Second {
		c.Lifetime = DefaultLifetime
	}
	if c.Repeats < 0 {
		c.Repeats = 0
	} else if c.Repeats == 0 {
		c.Repeats = 3
	}
	if c.Refresh <= 0 {
		c.Refresh = DefaultRefresh
	}
	if c.HoldDown == 0 {
		c.HoldDown = DefaultHoldDown
	}
	if c.Logger == nil {
		c.Logger = slog.New(slog.DiscardHandler)
	}
	if c.Metrics == nil {
		c.Metrics = announce.NoRecorder{}
	}
	return nil
}

// Announcer is the layer 2 announce.Announcer.
type Announcer struct {
	cfg  Config
	log  *slog.Logger
	link *link
	conn *net.UDPConn
	set  announce.Latest[announce.Want]
	in   chan announce.Heartbeat
	node *announce.Node
	// per address held: when to announce it next, and how many of the
	// first quick repeats are left
	garp    map[netip.Addr]*garp
	renewAt time.Time
	status  announce.Asks[[]netip.Addr]
	holders announce.Asks[announce.Holders]
	// who holds each address, as last logged (moves.go)
	known announce.Holders
	// operators: addresses of the Want the interface holds permanently
	// (warned about once)
	operators map[netip.Addr]bool
	want      announce.Want // the last one set, swept
	up        bool          // the link's carrier
	full      bool          // at announce.MaxHolds (logged once)
}

type garp struct {
	next time.Time
	left int
}

var _ announce.Announcer = (*Announcer)(nil)

// New opens the interface and the heartbeat socket in the calling
// thread's network namespace (Run may then run on any thread).
func New(cfg Config) (*Announcer, error) {
	if err := cfg.defaults(); err != nil {
		return nil, err
	}
	l, err := openLink(cfg.Interface, cfg.Lifetime)
	if err != nil {
		return nil, err
	}
	conn, err := net.ListenUDP("udp", net.UDPAddrFromAddrPort(cfg.Listen))
	if err != nil {
		l.close()
		return nil, fmt.Errorf("layer2: heartbeats: %w", err)
	}
	return &Announcer{cfg: cfg, log: cfg.Logger.With("announce", "l2", "interface", cfg.Interface), link: l, conn: conn,
		set: announce.NewLatest[announce.Want](), in: make(chan announce.Heartbeat, 64),
		garp: map[netip.Addr]*garp{}, status: make(announce.Asks[[]netip.Addr]), holders: make(announce.Asks[announce.Holders]),
		operators: map[netip.Addr]bool{}, known: announce.Holders{}}, nil
}

// Set implements announce.Announcer.
func (a *Announcer) Set(w announce.Want) { a.set.Put(w) }

// Holds is what this host holds now (nil once Run has ended).
func (a *Announcer) Holds(ctx context.Context) []netip.Addr { return a.status.Ask(ctx) }

// errAbandon, as the cause of Run's context, ends Run without letting
// go or telling anyone, as an agent that died (the tests' crash).
var errAbandon = errors.New("layer2: abandoned")

// Run implements announce.Announcer: until ctx ends it exchanges
// heartbeats and holds and announces what this host owns; then it
// withdraws its addresses and tells the others at once.
func (a *Announcer) Run(ctx context.Context) error {
	defer a.link.close()
	a.node = announce.NewNode(a.cfg.ID, time.Duration(a.cfg.Misses)*a.cfg.Interval, time.Now())
	a.node.HoldDown(max(a.cfg.HoldDown, 0))
	a.up = a.link.carrier()
	rctx, stop := context.WithCancel(ctx)
	done := make(chan struct{})
	go func() { defer close(done); a.read(rctx) }()
	defer func() { stop(); a.conn.Close(); <-done }()
	tick := time.NewTicker(a.cfg.Interval)
	defer tick.Stop()
	// a peer's silence is noticed within a quarter interval of its hold
	// time, not a whole one
	check := time.NewTicker(a.cfg.Interval / 4)
	defer check.Stop()
	for {
		select {
		case <-ctx.Done():
			if errors.Is(context.Cause(ctx), errAbandon) {
				return nil
			}
			a.node.Set(announce.Want{})
			a.apply(a.node.Decide(time.Now()))
			a.send()
			return nil
		case w := <-a.set.C():
			a.want = a.sweep(w)
			a.setNode()
			a.step(true)
		case hb := <-a.in:
			changed, err := a.node.Receive(hb, time.Now())
			if err != nil {
				a.log.Debug("heartbeat refused", "from", hb.Host, "error", err)
			} else if changed {
				a.step(false)
			}
		case <-tick.C:
			if up := a.link.carrier(); up != a.up {
				a.up = up
				a.log.Info("link carrier", "up", up)
				a.setNode()
			}
			a.step(true)
		case <-check.C:
			a.step(false)
		case c := <-a.status:
			c <- a.node.Holds()
		case c := <-a.holders:
			c <- a.node.Holders(time.Now())
		}
	}
}

// setNode tells the node the Want, unhealthy while the link has no
// carrier (it lets its addresses go at once rather than keep them on a
// dead link).
func (a *Announcer) setNode() {
	w := a.want
	w.Healthy = w.Healthy && a.up
	a.node.Set(w)
}

// step decides, applies what changed, announces what is due, and sends
// a heartbeat when it is time (always when something changed).
func (a *Announcer) step(beat bool) {
	now := time.Now()
	defer a.late(now)
	ch := a.node.Decide(now)
	a.apply(ch)
	if beat || !ch.Empty() {
		a.send()
	}
	a.moved(now)
	if now.After(a.renewAt) {
		for ad := range a.garp {
			if err := a.link.hold(ad); err != nil {
				a.log.Warn("renewing an address", "address", ad, "error", err)
			}
		}
		a.renewAt = now.Add(a.cfg.Lifetime / 3)
	}
	for ad, g := range a.garp {
		if now.Before(g.next) {
			continue
		}
		if err := a.link.announce(ad); err != nil {
			a.log.Warn("announcing an address", "address", ad, "error", err)
		}
		if g.left > 0 {
			g.left--
			g.next = now.Add(a.cfg.Interval)
		} else {
			g.next = now.Add(a.cfg.Refresh)
		}
	}
}

// apply puts the addresses taken on the interface and announces them,
// and takes the ones let go off.
func (a *Announcer) apply(ch announce.Change) {
	if !ch.Empty() {
		defer func() {
			held := a.node.Holds()
			a.cfg.Metrics.Addresses(len(held))
			a.cfg.Metrics.Held(held)
		}()
	}
	if ch.Unserved > 0 && !a.full {
		a.log.Error("addresses not announced: this host holds the most a heartbeat can carry", "max", announce.MaxHolds, "unserved", ch.Unserved)
	}
	a.full = ch.Unserved > 0
	for _, ad := range ch.Release {
		delete(a.garp, ad)
		if err := a.link.drop(ad); err != nil {
			a.log.Warn("dropping an address", "address", ad, "error", err)
		}
		a.log.Info("address released", "address", ad)
	}
	for _, ad := range ch.Take {
		if err := a.link.hold(ad); err != nil {
			a.log.Warn("taking an address", "address", ad, "error", err)
			continue
		}
		if err := a.link.announce(ad); err != nil {
			a.log.Warn("announcing an address", "address", ad, "error", err)
		}
		a.garp[ad] = &garp{next: time.Now().Add(a.cfg.Interval), left: a.cfg.Repeats - 1}
		a.log.Info("address taken", "address", ad, "peers", a.node.Peers(time.Now()))
	}
}

// sweep leaves out of w the addresses the interface holds permanently
// and the peers' addresses (the operator's, say a host's own address
// bound by --bind-address: never taken, never dropped), and takes off the interface the others of
// w this host does not hold (left by an earlier run whose lifetime has
// not lapsed yet).
func (a *Announcer) sweep(w announce.Want) announce.Want {
	on, err := a.link.present()
	if err != nil {
		a.log.Warn("listing the interface's addresses", "error", err)
		return w
	}
	out := announce.Want{Healthy: w.Healthy}
	for _, ad := range w.Normal().Addrs {
		permanent, there := on[ad]
		switch _, held := a.garp[ad]; {
		case there && permanent || slices.ContainsFunc(a.cfg.Peers, func(p netip.AddrPort) bool { return p.Addr().Unmap() == ad }):
			if !a.operators[ad] {
				a.log.Warn("address left alone: a host's own (a peer's, or on the interface without a lifetime)", "address", ad)
				a.operators[ad] = true
			}
			continue
		case there && !held:
			if err := a.link.drop(ad); err != nil {
				a.log.Warn("dropping an address left over", "address", ad, "error", err)
			}
		}
		out.Addrs = append(out.Addrs, ad)
	}
	return out
}

// send sends a heartbeat to every peer.
func (a *Announcer) send() {
	b, err := announce.Seal(a.node.Heartbeat(), a.cfg.Key)
	if err != nil {
		a.log.Error("heartbeat", "error", err)
		return
	}
	for _, p := range a.cfg.Peers {
		if _, err := a.conn.WriteToUDPAddrPort(b, p); err != nil {
			a.log.Debug("heartbeat not sent", "peer", p, "error", err)
		}
	}
}

// read hands the heartbeats heard to Run, those that open with the key.
func (a *Announcer) read(ctx context.Context) {
	buf := make([]byte, announce.MaxHeartbeat+1)
	for {
		k, from, err := a.conn.ReadFromUDPAddrPort(buf)
		if err != nil {
			if ctx.Err() != nil || errors.Is(err, net.ErrClosed) {
				return
			}
			continue
		}
		hb, err := announce.Open(buf[:k], a.cfg.Key)
		if err != nil {
			a.log.Debug("heartbeat refused", "from", from, "error", err)
			continue
		}
		select {
		case a.in <- hb:
		case <-ctx.Done():
			return
		}
	}
}
