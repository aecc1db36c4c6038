package cli

import (
	"context"
	"log/slog"
	"net/netip"
	"os"
	"time"

	"github.com/spf13/pflag"

	"github.com/haproxy-k8s-sync/haproxy-k8s-sync/internal/announce"
	"github.com/haproxy-k8s-sync/haproxy-k8s-sync/internal/announce/keepalived"
)

// keepalivedFlags are the flags of --announce=keepalived
// (docs/addresses.md, "keepalived").
type keepalivedFlags struct {
	config, pidFile, health string
	vrid, priority          int
	advert                  time.Duration
	sources                 []string
}

const (
	defKeepalivedConfig = "/etc/keepalived/keepalived.conf"
	defKeepalivedPid    = "/run/keepalived.pid"
	defKeepalivedHealth = "/run/haproxy-k8s-sync/keepalived.health"
	defKeepalivedVRID   = 51
)

func (k *keepalivedFlags) register(fs *pflag.FlagSet) {
	fs.StringVar(&k.config, "announce-keepalived-config", defKeepalivedConfig, "with --announce=keepalived: the keepalived.conf written from the served addresses (whole; keepalived reloaded when it changes)")
	fs.StringVar(&k.pidFile, "announce-keepalived-pid-file", defKeepalivedPid, "with --announce=keepalived: keepalived's main pid file (a new configuration is a SIGHUP to it)")
	fs.StringVar(&k.health, "announce-keepalived-health-file", defKeepalivedHealth, "with --announce=keepalived: the file keepalived tracks for this host's health (0 healthy, 1 not; no reload)")
	fs.IntVar(&k.vrid, "announce-keepalived-vrid", defKeepalivedVRID, "with --announce=keepalived: the IPv4 instance's virtual_router_id, the same on every host (the IPv6 instance takes the next)")
	fs.IntVar(&k.priority, "announce-keepalived-priority", keepalived.DefaultPriority, "with --announce=keepalived: this host's VRRP priority (1 to 254; the same on every host: nothing moves back)")
	fs.DurationVar(&k.advert, "announce-keepalived-advert", keepalived.DefaultAdvert, "with --announce=keepalived: the VRRPv3 advertisement interval (whole centiseconds)")
	fs.StringSliceVar(&k.sources, "announce-keepalived-unicast-source", nil, "with --announce=keepalived: this host's address for unicast adverts to --announce-peers, one per family (default: multicast)")
}

// set tells whether any flag of --announce=keepalived was given a value
// (other than its default; zero counts as unset).
func (k *keepalivedFlags) set() bool {
	given := func(v, def any, zero any) bool { return v != def && v != zero }
	return given(k.config, defKeepalivedConfig, "") || given(k.pidFile, defKeepalivedPid, "") || given(k.health, defKeepalivedHealth, "") ||
		given(k.vrid, defKeepalivedVRID, 0) || given(k.priority, keepalived.DefaultPriority, 0) ||
		given(k.advert, keepalived.DefaultAdvert, time.Duration(0)) || len(k.sources) > 0
}

// setupKeepalived starts the keepalived announcer (keepalived itself is
// the operator's, beside it); it runs until ctx ends.
func (a *announceFlags) setupKeepalived(ctx context.Context, static []netip.Addr, log *slog.Logger) (*announce.Driver, error) {
	if err := a.bgp.notWith(); err != nil {
		return nil, err
	}
	if a.keyFile != "" {
		return nil, flagErr("--announce-key-file is a flag of --announce=l2")
	}
	k := a.keepalived
	o := keepalived.Options{Config: keepalived.Config{Name: a.name, Interface: a.iface, VRID: k.vrid, Priority: k.priority,
		Advert: k.advert, HealthFile: k.health}, ConfigPath: k.config, PidFile: k.pidFile, Logger: log}
	if o.Name == "" {
		var err error
		if o.Name, err = os.Hostname(); err != nil {
			return nil, flagErr("--announce-name: %v", err)
		}
	}
	for _, s := range k.sources {
		ip, err := netip.ParseAddr(s)
		if err != nil {
			return nil, flagErr("--announce-keepalived-unicast-source: %q: want an IP address", s)
		}
		o.Sources = append(o.Sources, ip)
	}
	for _, p := range a.peers {
		ap, err := parsePeer(p)
		if err != nil {
			return nil, err
		}
		o.Peers = append(o.Peers, ap.Addr())
	}
	ann, err := keepalived.New(o)
	if err != nil {
		return nil, flagErr("--announce=keepalived: %v", err)
	}
	go func() { _ = ann.Run(ctx) }()
	log.Info("announcing addresses", "announce", announceKeepalived, "interface", a.iface, "config", k.config, "vrid", k.vrid)
	return announce.NewDriver(ann, static...), nil
}
