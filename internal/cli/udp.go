package cli

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"time"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"github.com/haproxy-k8s-sync/haproxy-k8s-sync/internal/driver"
	"github.com/haproxy-k8s-sync/haproxy-k8s-sync/internal/driver/nft"
	"github.com/haproxy-k8s-sync/haproxy-k8s-sync/internal/driver/tproxy"
)

// UDP modes.
const (
	udpNFTables = "nftables"
	udpOff      = "off"
)

// udpFlags are the flags of the kernel's UDP load balancing (docs/udp.md).
type udpFlags struct {
	mode     string // "" (auto), nftables or off
	health   string
	interval time.Duration
	netns    string
	forward  string // require or enable
}

func (u *udpFlags) register(fs *pflag.FlagSet) {
	fs.StringVar(&u.mode, "udp", "", "UDP ports: 'nftables' (the kernel load balances them through the table inet "+nft.Table+") or 'off' (skipped with an Event); default nftables when the controller has CAP_NET_ADMIN and IP forwarding allows it, otherwise off with an Event saying why")
	fs.StringVar(&u.health, "udp-health", nft.DefaultHealth, "how nodes serving UDP ports are probed: http:PORT[/PATH] (200 is healthy; default kube-proxy's healthz), tcp:PORT, or none")
	fs.DurationVar(&u.interval, "udp-health-interval", 2*time.Second, "probe interval; a node leaves after 2 failed probes and returns after 2 good ones")
	fs.StringVar(&u.netns, "udp-netns", "", "network namespace (a path, e.g. /run/netns/lb) holding the UDP data path; default the controller's own")
	fs.StringVar(&u.forward, "udp-ip-forward", "require", "'require': fail (or, without --udp, skip UDP) when IP forwarding is off; 'enable': turn it on (the documented deployment: a dedicated load-balancer host)")
}

// setup decides whether UDP ports go to the kernel and opens the driver
// if so (nil otherwise); the capabilities say which, and why not, for the
// Events.
func (u *udpFlags) setup(ctx context.Context, log *slog.Logger) (*nft.Driver, capabilities, error) {
	h, err := u.check()
	if err != nil {
		return nil, capabilities{}, err
	}
	skip := func(why string) (*nft.Driver, capabilities, error) {
		log.Info("UDP ports are not load balanced", "reason", why)
		return nil, capabilities{udpOff: why}, nil
	}
	if u.mode == udpOff {
		return skip("UDP load balancing is off (--udp=off)")
	}
	if !nft.HasNetAdmin() {
		if u.mode == udpNFTables {
			return nil, capabilities{}, errors.New("--udp=nftables needs CAP_NET_ADMIN")
		}
		return skip("the controller lacks CAP_NET_ADMIN, which the kernel's UDP load balancing needs (see docs/udp.md)")
	}
	d, err := nft.New(ctx, nft.Options{NetNS: u.netns, EnableForwarding: u.forward == "enable", Health: h, Logger: log})
	if err != nil {
		if u.mode == udpNFTables {
			return nil, capabilities{}, fmt.Errorf("--udp=nftables: %w", err)
		}
		return skip(err.Error())
	}
	log.Info("UDP ports are load balanced by the kernel", "table", "inet "+nft.Table, "health", u.health)
	return d, capabilities{udp: true}, nil
}

// check refuses bad UDP flags, touching nothing (run's checkFlags), and
// returns the nodes' health check they ask for.
func (u *udpFlags) check() (nft.Health, error) {
	if u.forward != "require" && u.forward != "enable" {
		return nft.Health{}, flagErr("--udp-ip-forward: want require or enable, got %q", u.forward)
	}
	switch u.mode {
	case udpOff, "", udpNFTables:
	default:
		return nft.Health{}, flagErr("--udp: want nftables or off, got %q", u.mode)
	}
	return nft.ParseHealth(u.health, u.interval)
}

// compose is the controller's driver: HAProxy for TCP, and the kernel for
// UDP when it is on.
func compose(hap driver.Driver, udp *nft.Driver) driver.Driver {
	if udp == nil {
		return hap
	}
	return driver.Fanout{hap, udp}
}

// newCleanupCmd is `cleanup --udp`: it deletes the controller's nftables
// table (a normal stop leaves it in place, so traffic keeps flowing).
func newCleanupCmd(e *cmdEnv) *cobra.Command {
	var udp bool
	var netns string
	var lc listenerCleanup // listeners.go
	c := &cobra.Command{
		Use:   "cleanup --udp",
		Short: "Delete the nftables table of the UDP ports (a normal stop leaves it)",
		Long: `Cleanup deletes what a stopped controller leaves in place on purpose, so that traffic keeps
flowing while it is down: with --udp, the nftables table inet ` + nft.Table + ` of the UDP ports;
with --listeners, the TPROXY table inet ` + tproxy.Table + ` and its policy routing (docs/listeners.md).`,
		Example: `  haproxy-k8s-sync cleanup --udp
  haproxy-k8s-sync cleanup --udp --udp-netns /run/netns/lb`,
		Args: noArgs,
		RunE: func(c *cobra.Command, _ []string) error {
			if err := finishFlags(c.Flags(), e.getenv, nil); err != nil {
				return err
			}
			if !udp && !lc.listeners {
				return errors.New("cleanup: say what to remove (--udp, --listeners)")
			}
			var err error
			if udp {
				err = nft.Cleanup(netns)
			}
			return errors.Join(err, lc.run())
		},
	}
	addGroup(c.Flags(), groupUDP, scopeAll, func(fs *pflag.FlagSet) {
		fs.BoolVar(&udp, "udp", false, "delete the nftables table inet "+nft.Table)
		fs.StringVar(&netns, "udp-netns", "", "network namespace (path) holding the table; default this process's own")
	})
	addGroup(c.Flags(), groupHAProxy, scopeAll, lc.register)
	return c
}
