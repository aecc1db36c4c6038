package cli

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"path/filepath"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/kubernetes/scheme"
	typedcorev1 "k8s.io/client-go/kubernetes/typed/core/v1"
	"k8s.io/client-go/tools/record"

	"github.com/haproxy-k8s-sync/haproxy-k8s-sync/internal/controller"
	"github.com/haproxy-k8s-sync/haproxy-k8s-sync/internal/driver"
	"github.com/haproxy-k8s-sync/haproxy-k8s-sync/internal/driver/runtimeapi"
	"github.com/haproxy-k8s-sync/haproxy-k8s-sync/internal/kubeclient"
	"github.com/haproxy-k8s-sync/haproxy-k8s-sync/internal/source"
)

type runFlags struct {
	shape
	kube                 kubeclient.Options
	config, bin, master  string
	apply                string
	resync, minReload    time.Duration
	reloadSettle         time.Duration
	persist, syncTimeout time.Duration
	persistMax           time.Duration
	logLevel, logFormat  string
	pprof                string
	status               statusFlags
	instances            instanceList
	metrics              metricsFlags
	statsPage            statsFlags
	dp                   dataplaneFlags
	mode                 string
	udp                  udpFlags
}

// Run is the `run` command with explicit context and environment, for
// tests and embedding: it returns when ctx ends or on a fatal error.
func Run(ctx context.Context, args []string, getenv func(string) string, stderr io.Writer) error {
	return runCmd(ctx, args, getenv, stderr)
}

// runCmd is `run`: the controller.
func runCmd(ctx context.Context, args []string, getenv func(string) string, stderr io.Writer) error {
	fs := newFlagSet("run", stderr)
	var f runFlags
	f.shape.register(fs)
	fs.StringVar(&f.kube.Kubeconfig, "kubeconfig", "", "kubeconfig file (default: in-cluster, then $KUBECONFIG)")
	fs.StringVar(&f.kube.APIServer, "api-server", "", "kube-apiserver URL (with --token-file for hosts outside the cluster)")
	fs.StringVar(&f.kube.TokenFile, "token-file", "", "file holding a bearer token (re-read when it changes)")
	fs.StringVar(&f.kube.CAFile, "ca-file", "", "CA bundle of the kube-apiserver's serving certificate")
	fs.StringVar(&f.config, "haproxy-config", "/etc/haproxy/haproxy.cfg", "haproxy.cfg this controller owns")
	fs.StringVar(&f.bin, "haproxy-bin", "haproxy", "haproxy binary, used to check configs")
	fs.StringVar(&f.master, "master-socket", "/run/haproxy-k8s-sync/master.sock", "HAProxy master CLI socket (haproxy -W -S PATH)")
	fs.StringVar(&f.apply, "apply", runtimeapi.ModeHybrid, "hybrid: servers through the Runtime API, reload only for structure; reload: reload on every change (baseline)")
	fs.DurationVar(&f.resync, "resync-period", 30*time.Second, "compare HAProxy's state with what was applied this often (off the pass lock) and correct drift")
	fs.DurationVar(&f.minReload, "min-reload-interval", 500*time.Millisecond, "structural changes arriving closer than this share one reload")
	fs.DurationVar(&f.reloadSettle, "reload-settle", 300*time.Millisecond, "a reload wanted after a quiet spell waits this long, so that changes written together (a new Service and its EndpointSlices) share it; server changes never wait")
	fs.DurationVar(&f.persist, "persist-interval", time.Second, "write the config and server-state files once changes have been quiet this long")
	fs.DurationVar(&f.persistMax, "persist-max-delay", 30*time.Second, "write the config and server-state files at the latest this long after the first change not yet written, even while changes keep coming")
	fs.DurationVar(&f.syncTimeout, "cache-sync-timeout", 5*time.Minute, "give up if the informer caches have not synced by then")
	f.status.register(fs)
	fs.StringVar(&f.logLevel, "log-level", "info", "debug, info, warn or error")
	fs.StringVar(&f.logFormat, "log-format", "text", "text or json")
	fs.StringVar(&f.pprof, "pprof-address", "", "serve Go profiles (net/http/pprof) on this address, e.g. 127.0.0.1:6060; off when empty")
	f.metrics.register(fs)
	f.statsPage.register(fs)
	f.dp.register(fs)
	fs.StringVar(&f.mode, "mode", modeServices, "services: load-balance Services; apiserver: load-balance the kube-apiservers (docs/apiserver.md)")
	apiFlags := registerAPIServerFlags(fs)
	f.udp.register(fs)
	fs.Var(&f.instances, "instance", "several HAProxy instances, each reconciled on its own: name=NAME,config=PATH,master=PATH,stats=PATH,state=PATH[,stats-page=[IP]:PORT] (a local HAProxy; replaces --haproxy-config, --master-socket, --stats-socket, --state-file) or name=NAME,dataplane-url=URL[,username=U][,password-file=PATH][,token-file=PATH] (a Data Plane API); repeatable")
	if err := parse(fs, args, getenv, &f.shape); err != nil {
		return err
	}
	log, err := newLogger(stderr, f.logLevel, f.logFormat)
	if err != nil {
		return err
	}
	routeKlog(log)
	tuneGC(getenv, log)
	switch f.mode {
	case modeServices:
	case modeAPIServer:
		return runAPIServer(ctx, &f, apiFlags, log)
	default:
		return fmt.Errorf("--mode: want %s or %s, got %q", modeServices, modeAPIServer, f.mode)
	}
	dopts, err := f.desiredOptions()
	if err != nil {
		return err
	}
	if f.apply != runtimeapi.ModeHybrid && f.apply != runtimeapi.ModeReload {
		return fmt.Errorf("--apply: want hybrid or reload, got %q", f.apply)
	}
	useDataplane, err := f.dp.selected()
	if err != nil {
		return err
	}
	if err := f.instances.check(useDataplane, f.statsPage, f.renderOptions(), log); err != nil {
		return err
	}
	udp, err := f.udp.setup(ctx, &dopts, log)
	if err != nil {
		return err
	}
	if f.pprof != "" {
		if err := servePprof(ctx, f.pprof, log); err != nil {
			return err
		}
	}
	cfg, err := kubeclient.Config(f.kube)
	if err != nil {
		return err
	}
	client, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		return err
	}
	bc := record.NewBroadcaster(record.WithContext(ctx))
	defer bc.Shutdown()
	bc.StartRecordingToSink(&typedcorev1.EventSinkImpl{Interface: client.CoreV1().Events("")})
	recorder := bc.NewRecorder(scheme.Scheme, corev1.EventSource{Component: "haproxy-k8s-sync"})

	var drv driver.Driver
	var watch func(context.Context, time.Duration, func())
	var insts *builtInstances
	if useDataplane {
		dd, err := f.dp.newDriver(&dopts, getenv, log, recorder)
		if err != nil {
			return err
		}
		defer stopDataplane(dd, log)
		drv = dd
	} else if len(f.instances) > 0 {
		if insts, err = f.instancesDriver(ctx, f.renderOptions(), &dopts, getenv, log, recorder); err != nil {
			return err
		}
		defer insts.close()
		drv, watch = insts.drv, insts.watch
	} else {
		hd, err := f.haproxyDriver(log)
		if err != nil {
			return err
		}
		defer hd.Close()
		defer persist(hd, f.persist, f.persistMax)()
		drv, watch = hd, hd.Watch
	}

	ns := ""
	if dopts.Service != "" {
		ns, _, _ = strings.Cut(dopts.Service, "/")
	}
	instName := driverHAProxy
	if useDataplane {
		instName = driverDataplane
	} else if len(f.instances) > 0 {
		instName = driverInstances
	}
	inst := f.metrics.instance(instName)
	src := source.New(client, ns)
	addrs, err := f.status.addresses()
	if err != nil {
		return err
	}
	sclient, err := statusClient(cfg)
	if err != nil {
		return err
	}
	pub := controller.NewPublisher(sclient, src, controller.PublisherOptions{
		Addresses: addrs, QPS: float32(f.status.qps), Burst: f.status.burst, Logger: log})
	events, gate := f.status.recorder(recorder)
	ctl := controller.New(src, compose(drv, udp), events, controller.Options{
		Desired:      dopts,
		ResyncPeriod: f.resync,
		SyncTimeout:  f.syncTimeout,
		Publisher:    pub,
		LastGoodPath: filepath.Join(filepath.Dir(f.stateFile), "last-good-settings.json"),
		Logger:       log,
		Metrics:      inst,
	})
	ready := &readiness{synced: ctl.Synced, inst: inst, socket: f.stats}
	if p, ok := drv.(interface{ Ping(context.Context) error }); ok {
		ready.probe = p.Ping
	}
	readyFn := ready.ready
	if insts != nil {
		readyFn = insts.readyFunc(ctl.Synced)
	}
	if err := f.metrics.serve(ctx, readyFn, log); err != nil {
		return err
	}
	if err := f.status.start(ctx, cfg, gate, pub, ctl.Trigger, log); err != nil {
		return err
	}
	if hd, ok := drv.(*runtimeapi.HAProxy); ok {
		go f.statsPage.watch(ctx, 2*time.Second, hd, ctl.Trigger, log)
	}
	switch {
	case insts != nil:
		go watch(ctx, time.Second, ctl.Trigger)
		log.Info("starting", "version", Version, "apply", f.apply, "instances", f.instances.String(), "targets", dopts.Targets)
	case watch != nil:
		go watch(ctx, time.Second, ctl.Trigger)
		log.Info("starting", "version", Version, "apply", f.apply, "config", f.config, "targets", dopts.Targets)
	default:
		log.Info("starting", "version", Version, "driver", driverDataplane, "dataplane", redactURL(f.dp.url), "backend", dopts.Backend, "targets", dopts.Targets)
	}
	f.nodeCheck.logStart(log, dopts)
	return ctl.Run(ctx)
}

func newLogger(w io.Writer, level, format string) (*slog.Logger, error) {
	var lv slog.Level
	if err := lv.UnmarshalText([]byte(level)); err != nil {
		return nil, fmt.Errorf("--log-level: %w", err)
	}
	opts := &slog.HandlerOptions{Level: lv}
	switch format {
	case "text":
		return slog.New(slog.NewTextHandler(w, opts)), nil
	case "json":
		return slog.New(slog.NewJSONHandler(w, opts)), nil
	}
	return nil, fmt.Errorf("--log-format: want text or json, got %q", format)
}

// haproxyDriver is the driver of the one local HAProxy that run's flags
// name (config file, master socket, stats page); the caller closes it.
func (f *runFlags) haproxyDriver(log *slog.Logger) (*runtimeapi.HAProxy, error) {
	ropts := f.renderOptions()
	if err := f.statsPage.resolve(&ropts, log); err != nil {
		return nil, err
	}
	return runtimeapi.NewHAProxy(runtimeapi.Options{
		ConfigPath:        f.config,
		Binary:            f.bin,
		MasterSocket:      f.master,
		Render:            ropts,
		Mode:              f.apply,
		MinReloadInterval: f.minReload,
		ReloadSettle:      f.reloadSettle,
		Logger:            log,
	}), nil
}
