package bgp

import (
	"context"
	"fmt"
	"log/slog"
	"net/netip"
	"slices"
	"time"

	"github.com/osrg/gobgp/v4/api"
	"github.com/osrg/gobgp/v4/pkg/apiutil"
	"github.com/osrg/gobgp/v4/pkg/packet/bgp"
	"github.com/osrg/gobgp/v4/pkg/server"

	"github.com/haproxy-k8s-sync/haproxy-k8s-sync/internal/announce"
)

// connectRetry is how often a session that is down is tried again, and
// idleAfterReset how long a session reset (by BFD, a NOTIFICATION) waits
// before its first try (seconds; GoBGP's defaults are 120 and 30, and it
// waits at least 2 s before any try).
const (
	connectRetry   = 3
	idleAfterReset = 2
)

// deferral is how long (seconds) a router whose session came up waits
// for this host's routes while another router's session is not up yet
// (GoBGP's restarting speaker waits for every router's End-of-RIB
// before it sends any; 360 s by default). It keeps the stale routes
// meanwhile, so only a change made in that second waits.
const deferral = 1

// Announcer is the BGP announce.Announcer.
type Announcer struct {
	cfg    Config
	log    *slog.Logger
	set    announce.Latest[announce.Want]
	status announce.Asks[[]netip.Addr]
	// the routers each address is advertised to (Advertised)
	advertised announce.Asks[map[netip.Addr][]string]
	// sessions going up (true) or down, by peer, from GoBGP's watcher
	sessions chan session
	// the peers as added, by address (BFD is switched on a copy)
	peers map[string]*api.Peer
}

type session struct {
	peer    string
	up      bool
	refusal *Refusal // the session went down refused
}

var _ announce.Announcer = (*Announcer)(nil)

// New checks cfg; Run starts the speaker.
func New(cfg Config) (*Announcer, error) {
	if err := cfg.defaults(); err != nil {
		return nil, err
	}
	return &Announcer{cfg: cfg, log: cfg.Logger.With("announce", "bgp"),
		set: announce.NewLatest[announce.Want](), status: make(announce.Asks[[]netip.Addr]),
		advertised: make(announce.Asks[map[netip.Addr][]string]),
		sessions:   make(chan session, 64), peers: map[string]*api.Peer{}}, nil
}

// Set implements announce.Announcer.
func (a *Announcer) Set(w announce.Want) { a.set.Put(w) }

// Announced is what this host announces now (nil once Run has ended).
func (a *Announcer) Announced(ctx context.Context) []netip.Addr { return a.status.Ask(ctx) }

// Run implements announce.Announcer. The sessions open at the first
// healthy Want, with every route of it, so that a restarting speaker
// sends the routers its whole table before its End-of-RIB (a router
// keeping this host's routes as stale would drop those missing from
// it) and never an empty one taken before the controller knows what it
// serves. When ctx ends the speaker stops: with graceful restart without
// a NOTIFICATION, so that the routers keep its routes for the restart
// time (a restart of the controller loses none); without, withdrawing
// them.
func (a *Announcer) Run(ctx context.Context) error {
	s := server.NewBgpServer(server.LoggerOption(newGobgpLogger(a.log)))
	go s.Serve()
	defer s.Stop() // the BFD server too
	if err := s.StartBgp(ctx, &api.StartBgpRequest{Global: &api.Global{
		Asn: a.cfg.ASN, RouterId: a.cfg.RouterID.String(),
		ListenPort: -1, // the speaker connects to the routers, never listens
	}}); err != nil {
		return fmt.Errorf("bgp: start: %w", err)
	}
	watch := func(ev *apiutil.WatchEventMessage_PeerEvent, _ time.Time) { a.peerEvent(ctx, ev) }
	if err := s.WatchEvent(ctx, server.WatchEventMessageCallbacks{OnPeerUpdate: watch}, server.WatchPeer()); err != nil {
		return fmt.Errorf("bgp: watch: %w", err)
	}
	var had []netip.Addr
	peered := false
	up := map[string]bool{}     // sessions established, by peer
	told := map[string]string{} // refusals told, by peer (refused.go)
	// the metrics say what reaches a router (record): looked at on every
	// change, and every recordEvery for the Adj-RIB-Outs GoBGP fills
	// after a session comes up
	rec := time.NewTicker(recordEvery)
	defer rec.Stop()
	for {
		select {
		case <-ctx.Done():
			a.stop(s, had)
			return nil
		case c := <-a.status:
			c <- slices.Clone(had)
		case c := <-a.advertised:
			c <- adjOut(s, a.cfg.Peers, a.cfg.families, up)
		case <-rec.C:
			a.record(s, up)
		case ss := <-a.sessions:
			up[ss.peer] = ss.up
			if ss.up {
				delete(told, ss.peer)
			}
			if ss.refusal != nil {
				a.refused(*ss.refusal, told)
			}
			a.cfg.Metrics.Sessions(count(up))
			a.bfd(ctx, s, ss)
			a.record(s, up)
		case w := <-a.set.C():
			before := had
			had = a.apply(s, had, routes(w))
			a.record(s, up)
			a.moved(before, had, w.Healthy)
			if !peered && w.Healthy {
				if err := a.peer(ctx, s); err != nil {
					a.stop(s, had)
					return err
				}
				peered = true
			}
		}
	}
}

// recordEvery is how often the metrics are read again from the
// Adj-RIB-Outs (record).
const recordEvery = time.Second

// record tells the metrics the addresses advertised to at least one
// router whose session is up (adjOut, as Advertised), not those the
// speaker merely holds: a route in no established session's
// Adj-RIB-Out reaches no router, and the metrics never claim more than
// the routers hear.
func (a *Announcer) record(s *server.BgpServer, up map[string]bool) {
	addrs := addrsOf(adjOut(s, a.cfg.Peers, a.cfg.families, up))
	a.cfg.Metrics.Addresses(len(addrs))
	a.cfg.Metrics.Held(addrs)
}

// apply announces what is wanted and not announced, and withdraws what
// is announced and not wanted; it returns what is announced then.
func (a *Announcer) apply(s *server.BgpServer, had, want []netip.Addr) []netip.Addr {
	add, withdraw := diff(had, want)
	now := slices.Clone(want)
	for _, ad := range withdraw {
		if err := s.DeletePath(apiutil.DeletePathRequest{Paths: []*apiutil.Path{path(ad, a.cfg.MED, true)}}); err != nil {
			a.log.Warn("withdrawing a route", "address", ad, "error", err)
			now = append(now, ad) // still announced
			continue
		}
		a.log.Info("route withdrawn", "address", ad)
	}
	for _, ad := range add {
		if _, err := s.AddPath(apiutil.AddPathRequest{Paths: []*apiutil.Path{path(ad, a.cfg.MED, false)}}); err != nil {
			a.log.Warn("announcing a route", "address", ad, "error", err)
			now = slices.DeleteFunc(now, func(x netip.Addr) bool { return x == ad })
			continue
		}
		a.log.Info("route announced", "address", ad, "med", a.cfg.MED)
	}
	slices.SortFunc(now, netip.Addr.Compare)
	return slices.Compact(now)
}

// peer opens a session to each router: IPv4 routes to the routers on
// IPv4, IPv6 routes to those on IPv6, and IPv4 routes to those too with
// IPv4OverIPv6 (Config.families).
func (a *Announcer) peer(ctx context.Context, s *server.BgpServer) error {
	hold := uint64(a.cfg.HoldTime / time.Second)
	gr := a.cfg.RestartTime > 0
	// the restarting speaker's OPEN (RFC 4724: restart state, and the
	// forwarding state kept for every family: HAProxy ran on). Without
	// them a router holding this host's routes as stale drops them the
	// moment the new session is up, before the first update, and its
	// traffic to them goes nowhere for that moment
	// (TestRouterKeepsRoutesAcrossARestart); with them it keeps them
	// until this speaker's End-of-RIB. On a first start the router holds
	// none: nothing changes for it.
	restart := &api.GracefulRestart{Enabled: gr, RestartTime: uint32(a.cfg.RestartTime / time.Second),
		LocalRestarting: gr, DeferralTime: deferral}
	for _, p := range a.cfg.Peers {
		var afiSafis []*api.AfiSafi
		for _, afi := range a.cfg.families(p) {
			afiSafis = append(afiSafis, &api.AfiSafi{
				Config:            &api.AfiSafiConfig{Family: &api.Family{Afi: afi, Safi: api.Family_SAFI_UNICAST}, Enabled: true},
				MpGracefulRestart: &api.MpGracefulRestart{Config: &api.MpGracefulRestartConfig{Enabled: gr}},
			})
		}
		peer := &api.Peer{
			Conf:            &api.PeerConf{NeighborAddress: p.Addr.String(), PeerAsn: p.ASN, AuthPassword: a.cfg.Password},
			Timers:          &api.Timers{Config: &api.TimersConfig{HoldTime: hold, KeepaliveInterval: hold / 3, ConnectRetry: connectRetry, IdleHoldTimeAfterReset: idleAfterReset}},
			Transport:       &api.Transport{RemotePort: uint32(p.port())},
			AfiSafis:        afiSafis,
			GracefulRestart: restart,
		}
		a.peers[p.Addr.String()] = peer
		if err := s.AddPeer(ctx, &api.AddPeerRequest{Peer: peer}); err != nil {
			return fmt.Errorf("bgp: peer %s: %w", p, err)
		}
	}
	a.log.Info("peering", "peers", len(a.cfg.Peers), "asn", a.cfg.ASN, "router_id", a.cfg.RouterID,
		"hold_time", a.cfg.HoldTime, "restart_time", a.cfg.RestartTime, "bfd", a.cfg.BFD, "md5", a.cfg.Password != "",
		"ipv4_over_ipv6", a.cfg.IPv4OverIPv6)
	return nil
}

// stop ends the speaker: with graceful restart and routes announced, the
// sessions close without a NOTIFICATION (the routers keep the routes for
// the restart time); otherwise the routes are withdrawn first.
func (a *Announcer) stop(s *server.BgpServer, had []netip.Addr) {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	keep := a.cfg.RestartTime > 0 && len(had) > 0
	if !keep && len(had) > 0 {
		a.moved(had, a.apply(s, had, nil), false)
	}
	if err := s.StopBgp(ctx, &api.StopBgpRequest{AllowGracefulRestart: keep}); err != nil {
		a.log.Warn("stopping", "error", err)
	}
	a.cfg.Metrics.Addresses(0)
	a.cfg.Metrics.Held(nil)
	a.cfg.Metrics.Sessions(0)
	if keep {
		a.log.Info("stopped; the routers keep this host's routes for the restart time", "routes", len(had), "restart_time", a.cfg.RestartTime)
	}
}

// peerEvent logs a session going up or down, and tells Run.
func (a *Announcer) peerEvent(ctx context.Context, ev *apiutil.WatchEventMessage_PeerEvent) {
	if ev.Type != apiutil.PEER_EVENT_STATE {
		return
	}
	st := ev.Peer.State
	var refusal *Refusal
	switch st.SessionState {
	case bgp.BGP_FSM_ESTABLISHED:
		a.log.Info("session up", "peer", st.NeighborAddress, "peer_asn", st.PeerASN)
	case bgp.BGP_FSM_IDLE, bgp.BGP_FSM_ACTIVE:
		if r, ok := refusalOf(st.NeighborAddress, st.DisconnectReason, st.DisconnectMessage); ok {
			refusal = &r
		} else if st.DisconnectMessage != "" || st.DisconnectReason != api.PeerState_DISCONNECT_REASON_UNSPECIFIED {
			a.log.Warn("session down", "peer", st.NeighborAddress, "reason", st.DisconnectReason.String(), "message", st.DisconnectMessage)
		}
	default:
		return
	}
	select {
	case a.sessions <- session{peer: st.NeighborAddress.String(), up: st.SessionState == bgp.BGP_FSM_ESTABLISHED, refusal: refusal}:
	case <-ctx.Done():
	}
}

// moved tells OnMove the addresses this host started or stopped
// announcing (withdrawn: unhealthy when its gate failed or it stops,
// else released: the address left the model).
func (a *Announcer) moved(before, after []netip.Addr, healthy bool) {
	if a.cfg.OnMove == nil {
		return
	}
	why := announce.WhyReleased
	if !healthy {
		why = announce.WhyUnhealthy
	}
	for _, m := range announce.Moves(a.holders(before), a.holders(after), func(string) string { return why }) {
		a.cfg.OnMove(m)
	}
}

// holders is this host as the holder of each of addrs.
func (a *Announcer) holders(addrs []netip.Addr) announce.Holders {
	out := make(announce.Holders, len(addrs))
	for _, ad := range addrs {
		out[ad] = []string{a.cfg.RouterID.String()}
	}
	return out
}

// count is the number of sessions up.
func count(up map[string]bool) int {
	n := 0
	for _, u := range up {
		if u {
			n++
		}
	}
	return n
}
