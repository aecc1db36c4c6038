package cli

import (
	"context"
	"log/slog"
	"net/netip"
	"time"

	"github.com/spf13/pflag"

	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/record"

	"github.com/haproxy-k8s-sync/haproxy-k8s-sync/internal/leader"
)

// publishFlags: what one replica of many publishes for the cluster (the
// LoadBalancer status of the Services it serves, Events) and the leader
// election that picks that replica.
type publishFlags struct {
	addrs                 stringList
	qps                   float64
	burst                 int
	claimQPS              float64
	claimBurst            int
	elect                 bool
	leNamespace, leName   string
	lease, renew, retryLE time.Duration
	pools                 bool
}

func (s *publishFlags) register(fs *pflag.FlagSet) {
	fs.Var(&s.addrs, "publish-address", "address written to .status.loadBalancer.ingress (ipMode Proxy) of the LoadBalancer Services served (repeatable or comma-separated; default none; needs services/status patch)")
	fs.BoolVar(&s.pools, "address-pools", false, "give each LoadBalancer Service (with --mode=gateway: each Gateway) its own address(es) from the AddressPool custom resources (the CRD must be installed; see docs/addresses.md); without it every Service listens on --bind-address")
	fs.Float64Var(&s.qps, "status-qps", 50, "at most this many LoadBalancer status writes per second (their own limit, apart from the passes; <= 0: unlimited)")
	fs.IntVar(&s.burst, "status-burst", 100, "burst of --status-qps")
	fs.Float64Var(&s.claimQPS, "claim-qps", 200, "with --address-pools: at most this many writes per second of the address claims (networking.k8s.io IPAddresses; a new object's address is bound and published once claimed; <= 0: unlimited)")
	fs.IntVar(&s.claimBurst, "claim-burst", 200, "burst of --claim-qps")
	fs.BoolVar(&s.elect, "leader-elect", false, "elect one replica (a coordination.k8s.io Lease) to write LoadBalancer status and Events; every replica drives its own HAProxy")
	fs.StringVar(&s.leNamespace, "leader-election-namespace", "", "namespace of the Lease (default: the Pod's namespace in a cluster, haproxy-k8s-sync outside)")
	fs.StringVar(&s.leName, "leader-election-name", "haproxy-k8s-sync", "name of the Lease")
	fs.DurationVar(&s.lease, "leader-election-lease-duration", 15*time.Second, "how long a leader that stopped renewing keeps the Lease")
	fs.DurationVar(&s.renew, "leader-election-renew-deadline", 10*time.Second, "the leader gives up if it could not renew for this long")
	fs.DurationVar(&s.retryLE, "leader-election-retry-period", 2*time.Second, "how often to try to acquire or renew the Lease")
}

func (s *publishFlags) addresses() ([]netip.Addr, error) {
	var out []netip.Addr
	for _, a := range s.addrs {
		ip, err := netip.ParseAddr(a)
		if err != nil {
			return nil, flagErr("--publish-address: %v", err)
		}
		out = append(out, ip)
	}
	return out, nil
}

// recorder gates Events: with --leader-elect only the leader emits them.
func (s *publishFlags) recorder(rec record.EventRecorder) (record.EventRecorder, *leader.Gate) {
	if !s.elect {
		return rec, leader.Always()
	}
	g := &leader.Gate{}
	return leader.Recorder{EventRecorder: rec, Gate: g}, g
}

// start runs the status writers (the Publisher, the AddressPools'
// status): with --leader-elect only while this replica leads (the gate
// open), otherwise always. trigger asks the controller for a pass, so a
// new leader reports the problems that remain.
func (s *publishFlags) start(ctx context.Context, cfg *rest.Config, gate *leader.Gate, runs []func(context.Context), trigger func(), log *slog.Logger) error {
	if !s.elect {
		for _, r := range runs {
			go r(ctx)
		}
		return nil
	}
	ns := s.leNamespace
	if ns == "" {
		ns = leader.InClusterNamespace()
	}
	if ns == "" {
		ns = "haproxy-k8s-sync"
	}
	lcfg := rest.CopyConfig(cfg)
	lcfg.Timeout = max(s.renew/2, time.Second)
	lclient, err := kubernetes.NewForConfig(rest.AddUserAgent(lcfg, "leader-election"))
	if err != nil {
		return err
	}
	opts := leader.Options{Namespace: ns, Name: s.leName, LeaseDuration: s.lease, RenewDeadline: s.renew, RetryPeriod: s.retryLE, Logger: log}
	go func() {
		err := leader.Run(ctx, lclient, gate, opts, func(lctx context.Context) {
			trigger()
			for _, r := range runs {
				go r(lctx)
			}
			<-lctx.Done()
		})
		if err != nil {
			log.Error("leader election stopped", "err", err)
		}
	}()
	return nil
}

// statusClient is a client of its own for status writes: the Publisher
// limits them (--status-qps), not the client shared with the informers.
func statusClient(cfg *rest.Config) (kubernetes.Interface, error) {
	c := rest.CopyConfig(cfg)
	c.QPS, c.Burst = -1, 0
	return kubernetes.NewForConfig(rest.AddUserAgent(c, "status"))
}
