// Package bgp is the BGP announcer: a speaker (GoBGP, as a library) that
// announces each address this host serves as a /32 or /128 to the
// operator's routers while the host is healthy, and withdraws them all
// when its health gate fails. Every healthy host announces the same
// addresses, so the routers see one path per host: equal paths spread
// the flows over the hosts (ECMP, active/active), a higher MED makes a
// host the backup (active/passive). With graceful restart a stopping or
// restarting speaker leaves its routes at the routers (kept as stale for
// the restart time), so restarting the controller loses no route.
package bgp

import (
	"errors"
	"fmt"
	"log/slog"
	"net/netip"
	"slices"
	"time"

	"github.com/osrg/gobgp/v4/api"

	"github.com/haproxy-k8s-sync/haproxy-k8s-sync/internal/announce"
)

// Defaults of Config.
const (
	DefaultPort        = 179
	DefaultHoldTime    = 9 * time.Second
	MinHoldTime        = 3 * time.Second
	DefaultRestartTime = 60 * time.Second
	// MaxRestartTime is the largest restart time the graceful restart
	// capability carries (12 bits of seconds).
	MaxRestartTime = 4095 * time.Second
	// MinBFDInterval is the shortest BFD interval taken (GoBGP's BFD
	// runs in the Go runtime: 50 ms keeps its timers honest on a busy host).
	MinBFDInterval = 50 * time.Millisecond
)

// ErrConfig is the class of every configuration the announcer refuses.
var ErrConfig = errors.New("bgp: configuration")

// Peer is one router.
type Peer struct {
	Addr netip.Addr
	Port uint16 // default DefaultPort
	ASN  uint32
}

func (p Peer) String() string {
	return netip.AddrPortFrom(p.Addr, p.port()).String()
}

func (p Peer) port() uint16 {
	if p.Port == 0 {
		return DefaultPort
	}
	return p.Port
}

// Config is one host's speaker.
type Config struct {
	ASN      uint32     // this host's AS number
	RouterID netip.Addr // an IPv4 address unique among the speakers
	Peers    []Peer
	// HoldTime of the sessions (keepalives every third of it); a router
	// that hears nothing for that long drops this host's routes.
	HoldTime time.Duration
	// RestartTime is the graceful restart time offered to the routers:
	// how long they keep this host's routes when its speaker stops or
	// restarts. 0 turns graceful restart off: a stopping speaker then
	// withdraws its routes.
	RestartTime time.Duration
	// MED of every route: a router prefers the lowest; equal MEDs make
	// equal paths (ECMP).
	MED uint32
	// Password is the TCP MD5 password of every session ("" none). It is
	// never logged.
	Password string
	// BFD, when not zero, runs BFD (RFC 5880/5881, single hop) with each
	// router at this interval, detection after 3 missed: a router that
	// runs BFD too drops this host's routes within 3 intervals of it
	// falling silent, not the hold time.
	BFD time.Duration
	// IPv4OverIPv6 announces the IPv4 addresses to the IPv6 routers too,
	// with this host's IPv6 address as their next hop (RFC 8950, the
	// extended next hop capability, which GoBGP always offers; the router
	// must take it, as BIRD's `extended next hop on` does, and its kernel
	// route IPv4 via IPv6). Without it a router gets the routes of its
	// session's family only.
	IPv4OverIPv6 bool
	Logger       *slog.Logger
	// Metrics, when set, is told the routes announced (how many, which)
	// and the number of sessions established.
	Metrics Recorder
	// OnMove, when set, is told each address this host starts or stops
	// announcing (announce.Move, this host named by its router ID).
	OnMove announce.MoveFunc `json:"-"`
	// OnRefused, when set, is told each router that refuses this host's
	// session (Refusal), once until that session is established again.
	OnRefused func(Refusal) `json:"-"`
}

// Recorder is what the announcer reports (internal/metrics.Announce).
type Recorder = announce.Recorder

func (c *Config) defaults() error {
	if c.ASN == 0 {
		return fmt.Errorf("%w: the local AS number is required", ErrConfig)
	}
	if !c.RouterID.Is4() {
		return fmt.Errorf("%w: the router ID must be an IPv4 address, got %q", ErrConfig, c.RouterID)
	}
	if len(c.Peers) == 0 {
		return fmt.Errorf("%w: no peers", ErrConfig)
	}
	seen := map[netip.Addr]bool{}
	for i, p := range c.Peers {
		if !p.Addr.IsValid() || p.Addr.IsUnspecified() || p.Addr.IsMulticast() {
			return fmt.Errorf("%w: peer %q: not a router's address", ErrConfig, p.Addr)
		}
		if p.ASN == 0 {
			return fmt.Errorf("%w: peer %s: no AS number", ErrConfig, p.Addr)
		}
		c.Peers[i].Addr = p.Addr.Unmap()
		if seen[c.Peers[i].Addr] {
			return fmt.Errorf("%w: peer %s twice", ErrConfig, p.Addr)
		}
		seen[c.Peers[i].Addr] = true
	}
	if c.IPv4OverIPv6 && !slices.ContainsFunc(c.Peers, func(p Peer) bool { return p.Addr.Is6() }) {
		return fmt.Errorf("%w: IPv4 over IPv6 without an IPv6 peer", ErrConfig)
	}
	if c.HoldTime == 0 {
		c.HoldTime = DefaultHoldTime
	}
	if c.HoldTime < MinHoldTime || c.HoldTime%time.Second != 0 {
		return fmt.Errorf("%w: hold time %s: want whole seconds, at least %s", ErrConfig, c.HoldTime, MinHoldTime)
	}
	if c.RestartTime < 0 || c.RestartTime > MaxRestartTime || c.RestartTime%time.Second != 0 {
		return fmt.Errorf("%w: restart time %s: want whole seconds from 0 to %s", ErrConfig, c.RestartTime, MaxRestartTime)
	}
	if c.BFD != 0 && c.BFD < MinBFDInterval {
		return fmt.Errorf("%w: BFD interval %s: want at least %s", ErrConfig, c.BFD, MinBFDInterval)
	}
	if c.Logger == nil {
		c.Logger = slog.New(slog.DiscardHandler)
	}
	if c.Metrics == nil {
		c.Metrics = announce.NoRecorder{}
	}
	return nil
}

// families are the address families of the session with p: its own, and
// IPv4 too over an IPv6 session with IPv4OverIPv6.
func (c *Config) families(p Peer) []api.Family_Afi {
	if p.Addr.Is4() {
		return []api.Family_Afi{api.Family_AFI_IP}
	}
	if c.IPv4OverIPv6 {
		return []api.Family_Afi{api.Family_AFI_IP6, api.Family_AFI_IP}
	}
	return []api.Family_Afi{api.Family_AFI_IP6}
}
