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
	// DefaultRestartTime is the command line's restart time (Config's
	// zero value is none)
	DefaultRestartTime = 10 * time.Second
	// KeptFile is the name of the file, beside the state file, where a
	// stop for a restart leaves what it held
	KeptFile = "announce-kept.json"
	// finishWithin bounds how long a stop waits for the interface's
	// worker to take the addresses off
	finishWithin = 10 * time.Second
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
	Logger   *slog.Logger `json:"-"`
	// Metrics, when set, is told which addresses this host holds.
	Metrics announce.Recorder `json:"-"`
	// OnMove, when set, is told every change of an address's owner this
	// host hears (announce.Moves; the Events of the Services).
	OnMove announce.MoveFunc `json:"-"`
	// RestartTime and KeptFile (both set): a stop keeps the addresses for
	// the next run for up to RestartTime, what was held written to
	// KeptFile (restart.go); otherwise a stop lets them go.
	RestartTime time.Duration
	KeptFile    string
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
	in   chan heard
	node *announce.Node
	// work: the interface's worker (iface.go)
	work    *worker
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
	ran       time.Time     // when the loop last ran (stall.go)
	evidence  evidence      // what the process had done then (stall.go)
}

var _ announce.Announcer = (*Announcer)(nil)

// New opens the interface and the heartbeat socket in the calling
// thread's network namespace (Run may then run on any thread).
func New(cfg Config) (*Announcer, error) {
	if err := cfg.defaults(); err != nil {
		return nil, err
	}
	l, err := openLink(cfg.Interface)
	if err != nil {
		return nil, err
	}
	conn, err := net.ListenUDP("udp", net.UDPAddrFromAddrPort(cfg.Listen))
	if err != nil {
		l.close()
		return nil, fmt.Errorf("layer2: heartbeats: %w", err)
	}
	readBuffer(conn)
	log := cfg.Logger.With("announce", "l2", "interface", cfg.Interface)
	return &Announcer{cfg: cfg, log: log, link: l, conn: conn,
		set: announce.NewLatest[announce.Want](), in: make(chan heard, 64), work: newWorker(l, cfg, log),
		status: make(announce.Asks[[]netip.Addr]), holders: make(announce.Asks[announce.Holders]),
		operators: map[netip.Addr]bool{}, known: announce.Holders{}}, nil
}

// Set implements announce.Announcer.
func (a *Announcer) Set(w announce.Want) { a.set.Put(w) }

// Holds is what this host has on its interface now (nil once Run has
// ended): an address it let go is not in it until it is off the
// interface, one it took not until it is on.
func (a *Announcer) Holds(ctx context.Context) []netip.Addr { return a.status.Ask(ctx) }

// Run implements announce.Announcer: until ctx ends it exchanges
// heartbeats and holds and announces what this host owns; then it
// withdraws its addresses and tells the others at once.
func (a *Announcer) Run(ctx context.Context) error {
	defer a.link.close()
	a.node = announce.NewNode(a.cfg.ID, time.Duration(a.cfg.Misses)*a.cfg.Interval, time.Now())
	a.node.HoldDown(max(a.cfg.HoldDown, 0))
	a.adopt(time.Now())
	a.up = a.link.carrier()
	rctx, stop := context.WithCancel(ctx)
	done := make(chan struct{})
	go func() { defer close(done); a.read(rctx) }()
	defer func() { stop(); a.conn.Close(); <-done }()
	// the worker outlives ctx (it is told its last job)
	wctx, wstop := context.WithCancel(context.WithoutCancel(ctx))
	defer wstop()
	go a.work.run(wctx)
	tick := time.NewTicker(a.cfg.Interval)
	defer tick.Stop()
	// a peer's silence is noticed within a quarter interval of its hold
	// time, not a whole one
	check := time.NewTicker(a.cfg.Interval / 4)
	defer check.Stop()
	for {
		select {
		case <-ctx.Done():
			if a.leave() {
				return nil
			}
			a.node.Set(announce.Want{})
			a.apply(a.node.Decide(time.Now()))
			a.send()
			a.work.finish(0, finishWithin)
			return nil
		case w := <-a.set.C():
			a.awake(time.Now())
			a.want = a.sweep(w)
			a.setNode()
			a.step(true)
		case h := <-a.in:
			a.awake(time.Now())
			if a.receive(h) {
				a.step(false)
			}
		case <-tick.C:
			a.awake(time.Now())
			if up := a.link.carrier(); up != a.up {
				a.up = up
				a.log.Info("link carrier", "up", up)
				a.setNode()
			}
			a.step(true)
		case <-check.C:
			a.awake(time.Now())
			if a.node.Due(time.Now()) {
				a.step(false)
			}
		case c := <-a.status:
			c <- a.work.holding()
		case c := <-a.holders:
			c <- a.served(time.Now())
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

// step decides, hands the worker what changed, and sends a heartbeat
// when it is time (always when something changed). It does no
// interface work itself (iface.go).
func (a *Announcer) step(beat bool) {
	now := time.Now()
	defer a.late(now)
	a.drain()
	ch := a.node.Decide(now)
	a.apply(ch)
	if beat || !ch.Empty() {
		a.send()
	}
	a.moved(now)
}

// apply hands the worker the addresses held after ch, and logs what
// changed.
func (a *Announcer) apply(ch announce.Change) {
	if ch.Unserved > 0 && !a.full {
		a.log.Error("addresses not announced: this host holds the most a heartbeat can carry", "max", announce.MaxHolds, "unserved", ch.Unserved)
	}
	a.full = ch.Unserved > 0
	if ch.Empty() && len(ch.Again) == 0 {
		return
	}
	a.work.put(a.node.Holds(), nil, ch.Again...)
	for _, ad := range ch.Again {
		a.log.Info("address announced again: a peer claims it too or was heard again", "address", ad)
	}
	for _, ad := range ch.Release {
		a.log.Info("address released", "address", ad)
	}
	peers := a.node.Peers(time.Now())
	for _, ad := range ch.Take {
		a.log.Info("address taken", "address", ad, "peers", peers)
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
	held := map[netip.Addr]bool{}
	for _, ad := range a.node.Holds() {
		held[ad] = true
	}
	var drop []netip.Addr
	for _, ad := range w.Normal().Addrs {
		permanent, there := on[ad]
		switch {
		case there && permanent || slices.ContainsFunc(a.cfg.Peers, func(p netip.AddrPort) bool { return p.Addr().Unmap() == ad }):
			if !a.operators[ad] {
				a.log.Warn("address left alone: a host's own (a peer's, or on the interface without a lifetime)", "address", ad)
				a.operators[ad] = true
			}
			continue
		case there && !held[ad]:
			drop = append(drop, ad)
		}
		out.Addrs = append(out.Addrs, ad)
	}
	if len(drop) > 0 {
		a.work.put(a.node.Holds(), drop)
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

// heard is a heartbeat and when it arrived.
type heard struct {
	hb announce.Heartbeat
	at time.Time
}

// receive hands the node a heartbeat, as of its arrival (a loop kept
// waiting does not make its peers look silent); it reports whether it
// changed what the node knows.
func (a *Announcer) receive(h heard) bool {
	changed, err := a.node.Receive(h.hb, h.at)
	if err != nil {
		a.log.Debug("heartbeat refused", "from", h.hb.Host, "error", err)
	}
	return changed
}

// drain takes the heartbeats already arrived, before a decision: a
// peer whose heartbeat waits in the queue is not silent.
func (a *Announcer) drain() {
	for {
		select {
		case h := <-a.in:
			a.receive(h)
		default:
			return
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
		case a.in <- heard{hb, time.Now()}:
		case <-ctx.Done():
			return
		}
	}
}
