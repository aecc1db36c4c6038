package cli

import (
	"context"
	"fmt"
	"log/slog"
	"net/netip"
	"os"
	"strings"
	"sync/atomic"
	"time"

	"github.com/spf13/pflag"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/record"

	"github.com/haproxy-k8s-sync/haproxy-k8s-sync/internal/announce"
	"github.com/haproxy-k8s-sync/haproxy-k8s-sync/internal/announce/layer2"
	"github.com/haproxy-k8s-sync/haproxy-k8s-sync/internal/controller"
	"github.com/haproxy-k8s-sync/haproxy-k8s-sync/internal/driver"
	"github.com/haproxy-k8s-sync/haproxy-k8s-sync/internal/loop"
	"github.com/haproxy-k8s-sync/haproxy-k8s-sync/internal/metrics"
)

// Announcers (--announce).
const (
	announceL2  = "l2"
	announceBGP = "bgp"
	// announceKeepalived: keepalived.conf rendered, keepalived the operator's
	announceKeepalived = "keepalived"
)

// announceFlags are the flags of the address announcer (docs/addresses.md,
// "Putting the addresses on the wire").
type announceFlags struct {
	mode     string
	iface    string
	peers    []string
	keyFile  string
	name     string
	listen   string
	interval time.Duration
	holdDown time.Duration
	restart  time.Duration
	// runAs: --announce-run-as (runas.go)
	runAs string
	// drainFile: --announce-drain-file (announce_drain.go)
	drainFile string
	// keptFile: where a stop for a restart leaves the addresses held
	// (layer2.KeptFile beside the state file; not a flag: run sets it)
	keptFile   string
	bgp        bgpFlags
	keepalived keepalivedFlags
	// onMove is told who announces an address changed (not a flag: run
	// sets it, controller.MoveEvents)
	onMove announce.MoveFunc
	// moved is poked on every move (the snapshot for `status`)
	moved loop.Wake
	// onRefused is told a router's refusal of the session (BGP; not a
	// flag: run sets it, controller.RefusalEvents)
	onRefused func(message string)
}

func (a *announceFlags) register(fs *pflag.FlagSet) {
	fs.StringVar(&a.mode, "announce", "", "put the served addresses on the network and move them when a host fails: 'l2' (ARP/NDP: one host of the group owns each address; run on every load-balancer host), 'bgp' (every healthy host announces each address to the routers), 'keepalived' (keepalived.conf written from the served addresses, this host's health a file keepalived tracks; keepalived runs beside); default off (the operator's: AnyIP, keepalived, a BGP speaker of its own)")
	fs.StringVar(&a.iface, "announce-interface", "", "with --announce=l2 or keepalived: the interface on the addresses' network")
	fs.StringSliceVar(&a.peers, "announce-peers", nil, "with --announce=l2: the other hosts of the group, IP[:PORT] on that network (heartbeats; comma-separated or repeated); with keepalived: their addresses for unicast adverts")
	fs.StringVar(&a.keyFile, "announce-key-file", "", "with --announce=l2: file holding the group's shared key (at least 16 bytes; heartbeats are signed with it, HMAC-SHA256)")
	fs.StringVar(&a.name, "announce-name", "", "with --announce=l2 or keepalived: this host's name in the group (default: the host name)")
	fs.StringVar(&a.listen, "announce-listen", fmt.Sprintf(":%d", layer2.DefaultPort), "with --announce=l2: where heartbeats are read ([IP]:PORT)")
	fs.DurationVar(&a.interval, "announce-interval", layer2.DefaultInterval, "with --announce=l2: heartbeat interval; a host silent for 3 intervals is gone and its addresses move")
	fs.DurationVar(&a.holdDown, "announce-hold-down", layer2.DefaultHoldDown, "with --announce=l2: a host that started, became healthy again or was cut off and heard again takes no new address for this long while a steady host is there (a flapping host moves each address at most once); 0: none")
	fs.StringVar(&a.runAs, "announce-run-as", "", "started as root: go on as UID:GID with CAP_NET_ADMIN and CAP_NET_RAW only (ambient capabilities: the process execs itself), what --announce=l2 needs in a container, where a non-root user's added capabilities have no effect (the chart); the container must add those two, CAP_SETUID and CAP_SETGID")
	fs.DurationVar(&a.restart, "announce-restart-time", layer2.DefaultRestartTime, "with --announce=l2: graceful restart: a stopping controller leaves this host's addresses on the interface and the other hosts wait this long for it before taking them, so that a restart or an upgrade moves nothing (whole seconds); 0: a stop lets them go at once")
	fs.StringVar(&a.drainFile, "announce-drain-file", "", "with --announce: while this file exists this host counts as unhealthy (its addresses move to the other hosts, its BGP routes are withdrawn) and its HAProxy serves on; removed at start (the chart's preStop hook creates it, so that a Pod being replaced hands its addresses over before its HAProxy stops)")
	a.bgp.register(fs)
	a.keepalived.register(fs)
}

// parsePeer is IP or IP:PORT (port default layer2.DefaultPort).
func parsePeer(s string) (netip.AddrPort, error) {
	if ap, err := netip.ParseAddrPort(s); err == nil {
		return ap, nil
	}
	a, err := netip.ParseAddr(strings.Trim(s, "[]"))
	if err != nil {
		return netip.AddrPort{}, flagErr("--announce-peers: %q: want IP or IP:PORT", s)
	}
	return netip.AddrPortFrom(a, layer2.DefaultPort), nil
}

// setup starts the announcer (nil when --announce is off); it runs until
// ctx ends, then lets its addresses go.
func (a *announceFlags) setup(ctx context.Context, static []netip.Addr, rec *metrics.Announce, log *slog.Logger) (*announce.Driver, error) {
	switch a.mode {
	case "":
		return nil, nil
	case announceL2:
		if err := a.bgp.notWith(); err != nil {
			return nil, err
		}
	case announceBGP:
		return a.setupBGP(ctx, static, rec, log)
	case announceKeepalived:
		return a.setupKeepalived(ctx, static, log)
	default:
		return nil, flagErr("--announce: want %s, %s or %s, got %q", announceL2, announceBGP, announceKeepalived, a.mode)
	}
	if a.keepalived.set() {
		return nil, flagErr("the --announce-keepalived-* flags are flags of --announce=keepalived")
	}
	if a.iface == "" || a.keyFile == "" {
		return nil, flagErr("--announce=l2 needs --announce-interface and --announce-key-file")
	}
	key, err := os.ReadFile(a.keyFile)
	if err != nil {
		return nil, fmt.Errorf("--announce-key-file: %w", err)
	}
	if key = []byte(strings.TrimSpace(string(key))); len(key) < 16 {
		return nil, flagErr("--announce-key-file: %s: the key has %d bytes, want at least 16", a.keyFile, len(key))
	}
	cfg := layer2.Config{ID: a.name, Interface: a.iface, Key: key, Interval: a.interval, HoldDown: a.holdDown, Logger: log, OnMove: a.onMove}
	if a.holdDown <= 0 {
		cfg.HoldDown = -1 // none
	}
	if a.restart < 0 || a.restart%time.Second != 0 {
		return nil, flagErr("--announce-restart-time: %s: want whole seconds, 0 or more", a.restart)
	}
	cfg.RestartTime, cfg.KeptFile = a.restart, a.keptFile
	if rec != nil {
		cfg.Metrics = rec
	}
	if cfg.ID == "" {
		if cfg.ID, err = os.Hostname(); err != nil {
			return nil, fmt.Errorf("--announce-name: %w", err)
		}
	}
	if cfg.Listen, err = parseListen(a.listen); err != nil {
		return nil, err
	}
	for _, p := range a.peers {
		ap, err := parsePeer(p)
		if err != nil {
			return nil, err
		}
		cfg.Peers = append(cfg.Peers, ap)
	}
	ann, err := layer2.New(cfg)
	if err != nil {
		return nil, fmt.Errorf("--announce=l2: %w", err)
	}
	go func() { _ = ann.Run(ctx) }()
	log.Info("announcing addresses", "announce", a.mode, "interface", a.iface, "name", cfg.ID, "peers", len(cfg.Peers))
	return announce.NewDriver(ann, static...), nil
}

// parseListen is [IP]:PORT.
func parseListen(s string) (netip.AddrPort, error) {
	if strings.HasPrefix(s, ":") {
		s = "[::]" + s
	}
	ap, err := netip.ParseAddrPort(s)
	if err != nil {
		return ap, flagErr("--announce-listen: %q: want [IP]:PORT", s)
	}
	return ap, nil
}

// withAnnouncer adds the announcer (when on) beside the controller's
// drivers: it gets every model, as they do.
func withAnnouncer(d driver.Driver, ann *announce.Driver) driver.Driver {
	if ann == nil {
		return d
	}
	return driver.Fanout{d, ann}
}

// notIn refuses --announce in a mode that does not run it yet.
func (a *announceFlags) notIn(mode string) error {
	if a.mode != "" {
		return flagErr("--announce: not in --mode=%s yet (only --mode=services)", mode)
	}
	return nil
}

// recorded is the announcer whose metrics are recorded ("" with
// --announce off).
func (a *announceFlags) recorded() string {
	if a.mode == announceL2 || a.mode == announceBGP {
		return a.mode
	}
	return ""
}

// statusWriters makes the changes of who announces an address visible
// through the leader's writes: an AddressMoved Event on the Services of
// the address for each move, the Announced condition of each Service
// (annStatus, run with the status writers; nil with keepalived or no
// announcer) and each AddressPool's announcedBy (through pools, when
// set): with --announce=l2 the group's owners (every host knows them),
// with --announce=bgp the leader's own routes advertised to a router
// whose session is up. Call bind with the announcer once set up; set
// onMove before setup.
func (a *announceFlags) statusWriters(client kubernetes.Interface, services controller.ServiceLister, pub *controller.Publisher,
	pools *controller.PoolStatus, events record.EventRecorder, log *slog.Logger) (annStatus *controller.Announced, bind func(*announce.Driver)) {
	var announced atomic.Pointer[announce.Driver]
	if scope, ok := map[string]controller.Scope{announceL2: controller.ScopeGroup, announceBGP: controller.ScopeLeader}[a.mode]; ok {
		holders := func(ctx context.Context) announce.Holders {
			if d := announced.Load(); d != nil {
				return d.Holders(ctx)
			}
			return nil
		}
		annStatus = controller.NewAnnounced(client, services, pub, holders, scope, log)
		pools.WithHolders(holders)
	}
	moved := controller.MoveEvents(pub, events)
	a.moved = loop.NewWake()
	a.onMove = func(m announce.Move) { moved(m); annStatus.Poke(); pools.Poke(); a.moved.Poke() }
	a.onRefused = controller.RefusalEvents(pub, events)
	return annStatus, func(d *announce.Driver) { announced.Store(d) }
}

// keepSnapshot keeps this host's view of who announces each address in
// path (announce.KeepSnapshot) for `status`, with an announcer that
// says (l2, bgp), until ctx ends.
func (a *announceFlags) keepSnapshot(ctx context.Context, ann *announce.Driver, path string, log *slog.Logger) {
	if ann == nil || a.recorded() == "" {
		return
	}
	go func() {
		if err := announce.KeepSnapshot(ctx, path, a.mode, ann.Holders, a.moved); err != nil {
			log.Warn("who announces each address is not kept for status", "path", path, "err", err)
		}
	}()
}
