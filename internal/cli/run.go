package cli

import (
	"context"
	"io"
	"log/slog"
	"path/filepath"
	"strings"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/kubernetes/scheme"
	typedcorev1 "k8s.io/client-go/kubernetes/typed/core/v1"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/record"

	"github.com/haproxy-k8s-sync/haproxy-k8s-sync/internal/announce"
	"github.com/haproxy-k8s-sync/haproxy-k8s-sync/internal/announce/layer2"
	"github.com/haproxy-k8s-sync/haproxy-k8s-sync/internal/claims"
	"github.com/haproxy-k8s-sync/haproxy-k8s-sync/internal/controller"
	"github.com/haproxy-k8s-sync/haproxy-k8s-sync/internal/desired"
	"github.com/haproxy-k8s-sync/haproxy-k8s-sync/internal/driver/nft"
	"github.com/haproxy-k8s-sync/haproxy-k8s-sync/internal/kubeclient"
	"github.com/haproxy-k8s-sync/haproxy-k8s-sync/internal/source"
	"github.com/haproxy-k8s-sync/haproxy-k8s-sync/internal/spares"
)

func newRunCmd(e *cmdEnv) *cobra.Command {
	var f runFlags
	c := &cobra.Command{
		Use:   "run [flags]",
		Short: "Watch the cluster and drive HAProxy",
		Long: `Run is the controller. In --mode=services (the default) it watches LoadBalancer Services (of
--class, or one --service), their EndpointSlices and the Nodes, and drives HAProxy: the local
one through its Runtime API and config file (--driver=haproxy), a Data Plane API
(--driver=dataplane), or several instances (--instance); UDP ports go to the kernel
(nftables, --udp). It writes the Services' LoadBalancer status (--publish-address), Events,
and serves /metrics, /healthz and /readyz.

In --mode=apiserver it load-balances the kube-apiservers instead (docs/apiserver.md).
In --mode=gateway it serves Gateway API Gateways and their TCP, TLS and UDP routes
(docs/gateway.md).

A flag of another mode or driver given on the command line is an error (exit 2).`,
		Example: `  # The local HAProxy, from the cluster of a kubeconfig
  haproxy-k8s-sync run --kubeconfig ~/.kube/config --publish-address 192.0.2.10

  # A Data Plane API instead of the local HAProxy
  haproxy-k8s-sync run --dataplane-url http://haproxy:5555 --dataplane-username admin \
      --dataplane-password-file /etc/hks/dataplane-password

  # The kube-apiservers behind the local HAProxy
  haproxy-k8s-sync run --mode=apiserver --listen :8443 --bootstrap-servers 192.0.2.11,192.0.2.12`,
		Args: noArgs,
		RunE: func(c *cobra.Command, _ []string) error {
			// How the informers read their first lists (the large kinds'
			// streamed unless KUBE_FEATURE_WatchListClient=false), from the
			// command's own environment (kubeclient/lists.go): Main's and
			// Run's alike.
			if err := kubeclient.WatchListFromEnv(e.getenv); err != nil {
				return flagErr("%v", err)
			}
			if err := runAs(f.announce.runAs); err != nil {
				return err
			}
			given := givenFlags(c.Flags())
			if err := finishFlags(c.Flags(), e.getenv, &f.shape); err != nil {
				return err
			}
			return f.run(c.Context(), c.Flags(), given, e)
		},
	}
	f.register(c.Flags(), e.getenv)
	return c
}

// run is `run`: the controller.
func (f *runFlags) run(ctx context.Context, fs *pflag.FlagSet, given map[string]bool, e *cmdEnv) (err error) {
	switch f.mode {
	case modeServices, modeAPIServer, modeGateway:
	default:
		return flagErr("--mode: want %s, %s or %s, got %q", modeServices, modeAPIServer, modeGateway, f.mode)
	}
	useDataplane, err := f.dp.selected()
	if err != nil && f.mode != modeAPIServer {
		return err
	}
	if err := checkScopes(fs, given, f.mode, useDataplane, len(f.instances) > 0); err != nil {
		return err
	}
	if err := f.ingress.check(f.mode, given); err != nil {
		return err
	}
	if _, err = f.pool.policy(); err != nil {
		return err
	}
	getenv, stderr := e.getenv, e.stderr
	log, err := newLogger(stderr, f.logLevel, f.logFormat)
	if err != nil {
		return err
	}
	routeKlog(log)
	memLimit, _, err := memoryLimit(f.memLimit)
	if err != nil {
		return err
	}
	tuneGC(getenv, memLimit, log)
	pageOutStart(log)
	if f.mode == modeGateway {
		if err := f.announce.notIn(f.mode); err != nil {
			return err // before the listeners' probe (auto) touches the kernel
		}
	}
	if err := f.checkFlags(useDataplane, log); err != nil {
		return err // runcheck.go: so is every other flag
	}
	f.resolveListeners(useDataplane, log) // listenersauto.go
	defer func() { f.listeners.undoProbe(err, log) }()
	f.pool.forListeners(f.shape.listeners.mode)
	if f.poolPolicy, err = f.pool.policy(); err != nil {
		return err
	}
	if f.mode == modeAPIServer {
		f.poolPolicy = spares.Policy{} // one backend, never new
	}
	// Every mode serves its profiles (the gateway and apiserver modes
	// took the flag and served none).
	if f.pprof != "" {
		if err := servePprof(ctx, f.pprof, log); err != nil {
			return err
		}
	}
	switch f.mode {
	case modeServices:
	case modeAPIServer:
		return runAPIServer(ctx, f, f.api, log)
	case modeGateway:
		return runGateway(ctx, f, useDataplane, getenv, log)
	}
	dopts, choice, udp, err := f.shapedOptions(ctx, useDataplane, log)
	if err != nil {
		return err
	}
	return f.runServices(ctx, choice, dopts, udp, getenv, log)
}

// shapedOptions are the desired state's options shaped by the drivers of
// choice (compose.go), and the kernel's UDP driver where it runs (nil
// otherwise): the Services and the gateway mode alike.
func (f *runFlags) shapedOptions(ctx context.Context, useDataplane bool, log *slog.Logger) (desired.Options, driverChoice, *nft.Driver, error) {
	dopts, err := f.desiredOptions()
	if err != nil {
		return dopts, driverChoice{}, nil, err
	}
	udp, udpCaps, err := f.udp.setup(ctx, log)
	if err != nil {
		return dopts, driverChoice{}, nil, err
	}
	choice := f.chooseDriver(useDataplane)
	return choice.capabilities(udpCaps).shape(dopts), choice, udp, nil
}

// watchedClient is the config and the client of the apiserver o names,
// every request of theirs seen by outage: the informers relist as soon as
// the apiserver answers again after an outage (source/relist.go).
func watchedClient(o kubeclient.Options, outage *source.Outage) (*rest.Config, kubernetes.Interface, error) {
	cfg, err := kubeclient.Config(o)
	if err != nil {
		return nil, nil, err
	}
	cfg.Wrap(outage.WrapTransport)
	client, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		return nil, nil, err
	}
	return cfg, client, nil
}

// runServices is `run --mode=services` once its flags are valid: the
// Service controller applying to the drivers of choice.
func (f *runFlags) runServices(ctx context.Context, choice driverChoice, dopts desired.Options, udp *nft.Driver, getenv func(string) string, log *slog.Logger) error {
	outage := source.NewOutage()
	cfg, client, err := watchedClient(f.kube, outage)
	if err != nil {
		return err
	}
	bc := record.NewBroadcaster(record.WithContext(ctx))
	defer bc.Shutdown()
	bc.StartRecordingToSink(&typedcorev1.EventSinkImpl{Interface: client.CoreV1().Events("")})
	recorder := bc.NewRecorder(scheme.Scheme, corev1.EventSource{Component: "haproxy-k8s-sync"})

	// The drivers before the controller: each --instance's metrics
	// recorder (the first creates the registry) comes before its
	// workqueue (metrics.New).
	b, err := f.build(ctx, choice, dopts, getenv, log, recorder)
	if err != nil {
		return err
	}
	defer b.close()
	if err := ensureDir(f.stateFile, "--state-file"); err != nil {
		return err
	}
	ns := ""
	if dopts.Service != "" {
		ns, _, _ = strings.Cut(dopts.Service, "/")
	}
	inst := f.metrics.instance(choice.label)
	src := source.New(client, ns)
	src.RelistAfterOutage(outage, log)
	addrs, err := f.publish.addresses()
	if err != nil {
		return err
	}
	sclient, err := statusClient(cfg)
	if err != nil {
		return err
	}
	var poolStatus *controller.PoolStatus
	var claimer *claims.Claimer
	if f.publish.pools {
		dyn, err := dynamic.NewForConfig(cfg)
		if err != nil {
			return err
		}
		src.WithPools(dyn)
		// Gateways (the gateway mode, --address-pools) hold addresses of
		// the same pools: read where the apiserver serves them.
		if ok, err := source.ServesGateways(client.Discovery()); err != nil {
			return err
		} else if ok {
			src.WithGateways()
		}
		poolStatus = controller.NewPoolStatus(dyn, log)
		if claimer, err = newClaimer(ctx, client, sclient, f.publish, src.WithClaims, src, f.metrics.claims(), log); err != nil {
			return err
		}
	}
	pub := controller.NewPublisher(sclient, src, controller.PublisherOptions{
		Addresses: addrs, Pooled: f.publish.pools, QPS: float32(f.publish.qps), Burst: f.publish.burst, Logger: log})
	events, gate := f.publish.recorder(recorder)
	annStatus, bindAnnouncer := f.announce.statusWriters(sclient, src, pub, poolStatus, events, log)
	f.announce.keptFile = filepath.Join(filepath.Dir(f.stateFile), layer2.KeptFile)
	ann, err := f.announce.setup(ctx, addrs, f.metrics.announce(f.announce.recorded()), log)
	if err != nil {
		return err
	}
	bindAnnouncer(ann)
	f.announce.keepSnapshot(ctx, ann, filepath.Join(filepath.Dir(f.stateFile), announce.SnapshotFile), log)
	memory := memoryTuner(getenv, f.memLimit == "auto", log)
	memory.Watch(ctx)
	defer memory.Stop()
	hold := &startHold{getenv: getenv, tuned: memory != nil, log: log}
	ctl := controller.New(src, withAnnouncer(compose(b.drv, udp), ann), events, controller.Options{
		Desired:      dopts,
		ResyncPeriod: f.resync,
		SyncTimeout:  f.syncTimeout,
		Publisher:    pub,
		PoolStatus:   poolStatus,
		Claimer:      claimer,
		LastGoodPath: filepath.Join(filepath.Dir(f.stateFile), "last-good-settings.json"),
		Logger:       log,
		Metrics:      inst,
		Leading:      gate.Leading,
		MemoryLimit:  memory,
		OnSynced:     func() { pageOutSynced(log); hold.synced(sourceSize(src)) },
		OnApplied:    func() { pageOutApplied(log); hold.applied() },
		Passes:       quietCollector(getenv, log),
	})
	ready := b.ready(ctl.Synced, inst)
	if err := f.metrics.serve(ctx, ready, log); err != nil {
		return err
	}
	if ann != nil {
		// the health gate: this host serves its addresses while ready and
		// its HAProxy answers
		stats := ""
		if choice.label == driverHAProxy {
			stats = f.stats
		}
		// with the local HAProxy the gate asks it itself: its readiness
		// is the caches and a configuration applied once, nothing the
		// apiserver or the last pass decides (issue 31)
		gateReady := ready
		if stats != "" {
			gateReady = configured(ctl.Synced, inst)
		}
		defer ann.StartGate(ctx, f.announce.drained(gateReady, log), stats, log)()
	}
	if err := f.publish.start(ctx, cfg, gate, []func(context.Context){pub.Run, poolStatus.Run, claimer.Run, annStatus.Run}, ctl.Trigger, log); err != nil {
		return err
	}
	b.watch(ctx, ctl.Trigger)
	log.Info("starting", append([]any{"version", Version}, append(b.attrs, "targets", dopts.Targets)...)...)
	f.nodeCheck.logStart(log, dopts)
	f.listeners.keepProbed()
	return ctl.Run(ctx)
}

func newLogger(w io.Writer, level, format string) (*slog.Logger, error) {
	var lv slog.Level
	if err := lv.UnmarshalText([]byte(level)); err != nil {
		return nil, flagErr("--log-level: %v", err)
	}
	opts := &slog.HandlerOptions{Level: lv}
	switch format {
	case "text":
		return slog.New(slog.NewTextHandler(w, opts)), nil
	case "json":
		return slog.New(slog.NewJSONHandler(w, opts)), nil
	}
	return nil, flagErr("--log-format: want text or json, got %q", format)
}
