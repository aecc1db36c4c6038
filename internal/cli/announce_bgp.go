package cli

import (
	"context"
	"fmt"
	"log/slog"
	"net"
	"net/netip"
	"os"
	"strconv"
	"strings"
	"time"

	"github.com/spf13/pflag"

	"github.com/haproxy-k8s-sync/haproxy-k8s-sync/internal/announce"
	"github.com/haproxy-k8s-sync/haproxy-k8s-sync/internal/announce/bgp"
	"github.com/haproxy-k8s-sync/haproxy-k8s-sync/internal/metrics"
)

// bgpFlags are the flags of --announce=bgp (docs/addresses.md, "BGP").
type bgpFlags struct {
	asn          uint32
	routerID     string
	peers        []string
	peerASN      uint32
	holdTime     time.Duration
	restartTime  time.Duration
	med          uint32
	passwordFile string
	bfd          time.Duration
	v4over6      bool
}

func (b *bgpFlags) register(fs *pflag.FlagSet) {
	fs.Uint32Var(&b.asn, "announce-bgp-asn", 0, "with --announce=bgp: this host's AS number (required)")
	fs.StringVar(&b.routerID, "announce-bgp-router-id", "", "with --announce=bgp: this host's BGP router ID, an IPv4 address unique among the speakers (default: the host's IPv4 address towards the first IPv4 peer)")
	fs.StringSliceVar(&b.peers, "announce-bgp-peers", nil, "with --announce=bgp: the routers, IP[:PORT][@ASN] (port 179, AS --announce-bgp-peer-asn by default; comma-separated or repeated); IPv4 addresses are announced to the IPv4 peers, IPv6 ones to the IPv6 peers")
	fs.Uint32Var(&b.peerASN, "announce-bgp-peer-asn", 0, "with --announce=bgp: the AS number of the peers that do not name one")
	fs.DurationVar(&b.holdTime, "announce-bgp-hold-time", bgp.DefaultHoldTime, "with --announce=bgp: the sessions' hold time (whole seconds, at least 3 s; keepalives every third): a router drops a silent host's routes after it, or sooner with --announce-bgp-bfd")
	fs.DurationVar(&b.restartTime, "announce-bgp-restart-time", bgp.DefaultRestartTime, "with --announce=bgp: graceful restart: how long the routers keep this host's routes while its controller restarts (whole seconds, at most 4095 s); 0 turns graceful restart off and a stopping controller withdraws its routes")
	fs.Uint32Var(&b.med, "announce-bgp-med", 0, "with --announce=bgp: the MED of this host's routes: equal on every host, the routers spread flows over them (ECMP); higher on a host, it is the backup (active/passive)")
	fs.StringVar(&b.passwordFile, "announce-bgp-password-file", "", "with --announce=bgp: file holding the TCP MD5 password of every session (at most 80 bytes; never logged)")
	fs.DurationVar(&b.bfd, "announce-bgp-bfd", 0, "with --announce=bgp: run BFD with each router at this interval (at least 50ms; down after 3 missed), so that a router running BFD too drops a dead host's routes within 3 intervals instead of the hold time; 0: off")
	fs.BoolVar(&b.v4over6, "announce-bgp-ipv4-over-ipv6", false, "with --announce=bgp: announce the IPv4 addresses to the IPv6 peers too, with this host's IPv6 address as their next hop (RFC 8950 extended next hop: the router must accept it)")
}

// set tells whether any flag of --announce=bgp was given a value.
func (b *bgpFlags) set() bool {
	return b.asn != 0 || b.routerID != "" || len(b.peers) > 0 || b.peerASN != 0 || b.med != 0 || b.passwordFile != "" || b.bfd != 0 || b.v4over6 ||
		b.holdTime != bgp.DefaultHoldTime || b.restartTime != bgp.DefaultRestartTime
}

// notWith refuses the flags of --announce=bgp with another announcer.
func (b *bgpFlags) notWith() error {
	if b.set() {
		return flagErr("the --announce-bgp-* flags are flags of --announce=bgp")
	}
	return nil
}

// parseBGPPeer is IP[:PORT][@ASN].
func parseBGPPeer(s string, defASN uint32) (bgp.Peer, error) {
	hostPort, asn, hasASN := strings.Cut(s, "@")
	p := bgp.Peer{ASN: defASN}
	if hasASN {
		n, err := strconv.ParseUint(asn, 10, 32)
		if err != nil || n == 0 {
			return p, flagErr("--announce-bgp-peers: %q: the AS number %q is not a number from 1 to 4294967295", s, asn)
		}
		p.ASN = uint32(n)
	}
	if ap, err := netip.ParseAddrPort(hostPort); err == nil {
		if ap.Port() == 0 {
			return p, flagErr("--announce-bgp-peers: %q: port 0", s)
		}
		p.Addr, p.Port = ap.Addr(), ap.Port()
	} else if a, err := netip.ParseAddr(strings.Trim(hostPort, "[]")); err == nil && a.Zone() == "" {
		p.Addr = a
	} else {
		return p, flagErr("--announce-bgp-peers: %q: want IP[:PORT][@ASN]", s)
	}
	if p.ASN == 0 {
		return p, flagErr("--announce-bgp-peers: %s has no AS number: give it as %s@ASN or set --announce-bgp-peer-asn", s, hostPort)
	}
	return p, nil
}

// config is the speaker's configuration from the flags.
func (b *bgpFlags) config(log *slog.Logger) (bgp.Config, error) {
	cfg := bgp.Config{ASN: b.asn, HoldTime: b.holdTime, RestartTime: b.restartTime, MED: b.med, BFD: b.bfd, IPv4OverIPv6: b.v4over6, Logger: log}
	if b.asn == 0 {
		return cfg, flagErr("--announce=bgp needs --announce-bgp-asn and --announce-bgp-peers")
	}
	for _, s := range b.peers {
		p, err := parseBGPPeer(s, b.peerASN)
		if err != nil {
			return cfg, err
		}
		cfg.Peers = append(cfg.Peers, p)
	}
	if len(cfg.Peers) == 0 {
		return cfg, flagErr("--announce=bgp needs --announce-bgp-asn and --announce-bgp-peers")
	}
	if b.routerID != "" {
		a, err := netip.ParseAddr(b.routerID)
		if err != nil || !a.Is4() {
			return cfg, flagErr("--announce-bgp-router-id: %q: want an IPv4 address", b.routerID)
		}
		cfg.RouterID = a
	} else {
		a, err := routerIDTowards(cfg.Peers)
		if err != nil {
			return cfg, err
		}
		cfg.RouterID = a
	}
	if b.passwordFile != "" {
		pw, err := os.ReadFile(b.passwordFile)
		if err != nil {
			return cfg, fmt.Errorf("--announce-bgp-password-file: %w", err)
		}
		cfg.Password = strings.TrimRight(string(pw), "\r\n")
		// TCP_MD5SIG_MAXKEYLEN
		if cfg.Password == "" || len(cfg.Password) > 80 {
			return cfg, flagErr("--announce-bgp-password-file: %s: the password has %d bytes, want 1 to 80", b.passwordFile, len(cfg.Password))
		}
	}
	return cfg, nil
}

// routerIDTowards is the host's IPv4 address that the kernel picks to
// reach the first IPv4 peer (a UDP socket connected, nothing sent).
func routerIDTowards(peers []bgp.Peer) (netip.Addr, error) {
	for _, p := range peers {
		if !p.Addr.Is4() {
			continue
		}
		c, err := net.DialUDP("udp4", nil, net.UDPAddrFromAddrPort(netip.AddrPortFrom(p.Addr, bgp.DefaultPort)))
		if err != nil {
			return netip.Addr{}, fmt.Errorf("--announce-bgp-router-id: no route to %s to take the host's address from (set it): %w", p.Addr, err)
		}
		defer c.Close()
		return c.LocalAddr().(*net.UDPAddr).AddrPort().Addr().Unmap(), nil
	}
	return netip.Addr{}, flagErr("--announce-bgp-router-id: no IPv4 peer to take the host's address from: set it")
}

// setupBGP starts the BGP speaker; it runs until ctx ends.
func (a *announceFlags) setupBGP(ctx context.Context, static []netip.Addr, rec *metrics.Announce, log *slog.Logger) (*announce.Driver, error) {
	if a.iface != "" || a.keyFile != "" || len(a.peers) > 0 {
		return nil, flagErr("--announce-interface, --announce-peers and --announce-key-file are flags of --announce=l2")
	}
	if a.keepalived.set() {
		return nil, flagErr("the --announce-keepalived-* flags are flags of --announce=keepalived")
	}
	cfg, err := a.bgp.config(log)
	if err != nil {
		return nil, err
	}
	if rec != nil {
		cfg.Metrics = rec
	}
	cfg.OnMove = a.onMove
	if a.onRefused != nil {
		id := cfg.RouterID
		cfg.OnRefused = func(r bgp.Refusal) { a.onRefused(r.Message(id)) }
	}
	ann, err := bgp.New(cfg)
	if err != nil {
		return nil, flagErr("--announce=bgp: %v", err)
	}
	go func() {
		if err := ann.Run(ctx); err != nil {
			log.Error("the BGP announcer stopped", "error", err)
		}
	}()
	log.Info("announcing addresses", "announce", announceBGP, "asn", cfg.ASN, "router_id", cfg.RouterID, "peers", len(cfg.Peers))
	return announce.NewDriver(ann, static...), nil
}
