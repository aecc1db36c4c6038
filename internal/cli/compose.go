package cli

import (
	"context"
	"fmt"
	"log/slog"
	"strings"
	"time"

	"k8s.io/client-go/tools/record"

	"github.com/haproxy-k8s-sync/haproxy-k8s-sync/internal/desired"
	"github.com/haproxy-k8s-sync/haproxy-k8s-sync/internal/driver"
	"github.com/haproxy-k8s-sync/haproxy-k8s-sync/internal/driver/runtimeapi"
	"github.com/haproxy-k8s-sync/haproxy-k8s-sync/internal/metrics"
	"github.com/haproxy-k8s-sync/haproxy-k8s-sync/internal/model"
	"github.com/haproxy-k8s-sync/haproxy-k8s-sync/internal/render"
)

// The composition of run's drivers, in one place (as external-dns's
// provider/builder.go): the choice of driver, written once; what each kind
// of driver declares it can do, from which the desired state's options
// follow; and how each driver is built, started and stopped.

// capabilities is what the drivers a controller applies to can do. The
// desired state's options follow from it (shape), never from the name of a
// driver.
type capabilities struct {
	// trackNodes: servers may follow their node through one server per
	// node in the _nodes backend (both drivers keep it; the Data Plane API
	// driver only where it owns the backends: see shape).
	trackNodes bool
	// operatorBackend: in single-Service mode the backend is the
	// operator's, in haproxy.cfg, named after the Service unless
	// --backend-name says otherwise (as the older controller named it).
	operatorBackend bool
	// udp: UDP ports are balanced (the kernel's driver runs); udpOff says
	// why not, for the Events.
	udp    bool
	udpOff string
}

// driverCaps is the composition table: what each kind of driver of
// --driver and --instance can do. The kernel's UDP driver adds its own
// (udpFlags.setup).
var driverCaps = map[string]capabilities{
	driverHAProxy:   {trackNodes: true},
	driverDataplane: {trackNodes: true, operatorBackend: true},
}

// shape derives the desired state's options from what the drivers can do.
func (c capabilities) shape(o desired.Options) desired.Options {
	// In single-Service mode with an operator's backend, that backend is
	// not the controller's to bind to a _nodes backend: no server follows
	// its node (for every driver of the choice: they share one model).
	o.TrackNodes = o.TrackNodes && c.trackNodes && !(c.operatorBackend && o.Service != "")
	// Its servers carry the node check themselves instead, when one was
	// asked for (--node-check given: the older controller's own-port
	// check stays the default there).
	o.CarryNodeCheck = o.CarryNodeCheck && c.operatorBackend && o.Service != ""
	if c.operatorBackend && o.Service != "" && o.Backend == "" {
		_, o.Backend, _ = strings.Cut(o.Service, "/")
	}
	o.UDP, o.UDPOff = c.udp, c.udpOff
	return o
}

// driverChoice is the driver run chose: the kind of each driver it runs
// (one, or one per --instance) and the "driver" label of its metrics.
type driverChoice struct {
	label string
	kinds []string
}

// chooseDriver is the choice of driver; useDataplane is dp.selected's.
func (f *runFlags) chooseDriver(useDataplane bool) driverChoice {
	switch {
	case len(f.instances) > 0:
		c := driverChoice{label: driverInstances}
		for _, s := range f.instances {
			c.kinds = append(c.kinds, s.kind())
		}
		return c
	case useDataplane:
		return driverChoice{label: driverDataplane, kinds: []string{driverDataplane}}
	}
	return driverChoice{label: driverHAProxy, kinds: []string{driverHAProxy}}
}

// capabilities is what every driver of the choice can do (a capability
// of servers only if all have it), with udp's.
func (c driverChoice) capabilities(udp capabilities) capabilities {
	out := capabilities{trackNodes: true, udp: udp.udp, udpOff: udp.udpOff}
	for _, k := range c.kinds {
		kc := driverCaps[k]
		out.trackNodes = out.trackNodes && kc.trackNodes
		out.operatorBackend = out.operatorBackend || kc.operatorBackend
	}
	return out
}

// localHAProxy is one local HAProxy's files and sockets.
type localHAProxy struct {
	config, master string
	render         render.Options
}

// newLocalHAProxy builds the driver of a local HAProxy and starts keeping
// its files in step (persist); stop, once the passes have ended, writes
// what is still due and closes it. The one lifecycle of every local
// HAProxy: run's, each --instance's and the apiserver mode's.
func (f *runFlags) newLocalHAProxy(l localHAProxy, log *slog.Logger) (hd *runtimeapi.HAProxy, stop func()) {
	hd = runtimeapi.NewHAProxy(runtimeapi.Options{
		ConfigPath: l.config, Binary: f.bin, MasterSocket: l.master, Render: l.render,
		Mode: f.apply, MinReloadInterval: f.minReload, ReloadSettle: f.reloadSettle, Logger: log,
		Pool: f.poolPolicy, GrowAside: f.poolPolicy.On(),
	})
	stopPersist := persist(hd, f.persist, f.persistMax)
	return hd, func() {
		stopPersist()
		hd.Close()
	}
}

// single is run's one local HAProxy, named by its flags.
func (f *runFlags) single(log *slog.Logger) (*runtimeapi.HAProxy, func(), error) {
	if err := f.listeners.refuseTProxy(f.mode); err != nil {
		return nil, nil, err
	}
	if err := f.checkHAProxy(log); err != nil {
		return nil, nil, err
	}
	ropts := f.renderOptions()
	ropts.ConnectPerRequest = f.binVersion.ConnectPerRequest() // the Ingresses' connect timeouts as map data
	if err := f.statsPage.resolve(&ropts, log); err != nil {
		return nil, nil, err
	}
	hd, stop := f.newLocalHAProxy(localHAProxy{config: f.config, master: f.master, render: ropts}, log)
	return hd, stop, nil
}

// built is the drivers run assembled for the controller.
type built struct {
	drv   driver.Driver
	ready func(synced func() bool, inst *metrics.Instance) func(context.Context) error // /readyz
	watch func(ctx context.Context, trigger func())                                    // worker PIDs, stats auth files
	close func()                                                                       // after the passes have ended
	attrs []any                                                                        // of the start log line
}

// build builds the drivers of choice for dopts (already shaped).
func (f *runFlags) build(ctx context.Context, choice driverChoice, dopts desired.Options, getenv func(string) string,
	log *slog.Logger, recorder record.EventRecorder) (*built, error) {
	switch choice.label {
	case driverDataplane:
		t := dpTarget{url: f.dp.url, user: f.dp.user, passwordFile: f.dp.passwordFile, tokenFile: f.dp.tokenFile}
		dd, err := f.dp.newDriverAt(t, dopts, getenv, log, recorder)
		if err != nil {
			return nil, err
		}
		return &built{drv: dd, close: func() { stopDataplane(dd, log) },
			ready: func(synced func() bool, inst *metrics.Instance) func(context.Context) error {
				return (&readiness{synced: synced, inst: inst, probe: dd.Ping}).ready
			},
			watch: func(context.Context, func()) {},
			attrs: []any{"driver", driverDataplane, "dataplane", redactURL(f.dp.url), "backend", dopts.Backend}}, nil
	case driverInstances:
		return f.buildInstances(ctx, dopts, getenv, log, recorder)
	}
	hd, stop, err := f.single(log)
	if err != nil {
		return nil, err
	}
	drv, stopListeners, err := f.wrapListeners(hd, log)
	if err != nil {
		stop()
		return nil, err
	}
	return &built{drv: drv, close: func() { stopListeners(); stop() },
		ready: func(synced func() bool, inst *metrics.Instance) func(context.Context) error {
			return (&readiness{synced: synced, inst: inst, socket: f.stats}).ready
		},
		watch: func(ctx context.Context, trigger func()) {
			go hd.Watch(ctx, time.Second, trigger)
			go f.statsPage.watch(ctx, 2*time.Second, hd, trigger, log)
		},
		attrs: []any{"apply", f.apply, "config", f.config}}, nil
}

// buildInstances builds one driver per --instance behind a
// driver.Instances: each is reconciled on its own (own worker, retries and
// backoff, metrics), a local HAProxy as run's own, a Data Plane API as
// --dataplane-url's (with its own credentials, else the --dataplane-*
// ones).
func (f *runFlags) buildInstances(ctx context.Context, dopts desired.Options, getenv func(string) string, log *slog.Logger, recorder record.EventRecorder) (*built, error) {
	var insts []driver.Instance
	var watches []func(context.Context, func())
	var closers []func()
	closeAll := func() {
		for _, c := range closers {
			c()
		}
	}
	var names []string
	var readies []*readiness
	if f.listeners.mode == render.ListenersTProxy {
		return nil, flagErr("--listeners=tproxy: one local HAProxy only, not --instance")
	}
	ropts := f.renderOptions()
	for _, s := range f.instances {
		name := s.name
		ilog := log.With("instance", s.name)
		var d driver.Driver
		var ready *readiness
		if s.kind() == driverDataplane {
			t := s.dp
			if t.user == "" && t.passwordFile == "" && t.tokenFile == "" {
				t.user, t.passwordFile, t.tokenFile = f.dp.user, f.dp.passwordFile, f.dp.tokenFile
			}
			dd, err := f.dp.newDriverAt(t, dopts, getenv, ilog, recorder)
			if err != nil {
				closeAll()
				return nil, fmt.Errorf("--instance %s: %w", s.name, err)
			}
			closers = append(closers, func() { stopDataplane(dd, ilog) })
			d, ready = dd, &readiness{probe: dd.Ping}
		} else {
			if err := f.checkHAProxy(log); err != nil {
				closeAll()
				return nil, err
			}
			ro := ropts
			ro.ConnectPerRequest = f.binVersion.ConnectPerRequest()
			ro.StatsSocket, ro.StateFile = s.stats, s.state
			if s.page != nil {
				ro.Stats, ro.StatsAuth = s.page.bind, s.page.auth
			}
			hd, stop := f.newLocalHAProxy(localHAProxy{config: s.config, master: s.master, render: ro}, ilog)
			closers = append(closers, stop)
			page := s.page
			watches = append(watches, func(ctx context.Context, trigger func()) {
				go hd.Watch(ctx, time.Second, trigger)
				if page != nil {
					go page.watch(ctx, 2*time.Second, hd, trigger, ilog)
				}
			})
			d, ready = hd, &readiness{socket: s.stats}
		}
		rec := f.metrics.instance(instanceMetricsName(s.kind(), s.name))
		ready.inst, ready.synced = rec, func() bool { return true } // the caches: readyFunc's
		names, readies = append(names, s.name), append(readies, ready)
		insts = append(insts, driver.Instance{Name: s.name, Driver: d, Drift: rec.Drift,
			Observe: func(cfg model.Config, res driver.Result, err error, took time.Duration) {
				rec.Applied(cfg, res, err, 0, took)
				if err == nil && f.onApplied != nil {
					f.onApplied(name, cfg)
				}
			}})
	}
	m := driver.NewInstances(insts, log)
	go m.Run(ctx)
	b := &builtInstances{names: names, ready: readies}
	return &built{drv: m, close: closeAll,
		ready: func(synced func() bool, _ *metrics.Instance) func(context.Context) error { return b.readyFunc(synced) },
		watch: func(ctx context.Context, trigger func()) {
			for _, w := range watches {
				w(ctx, trigger)
			}
		},
		attrs: []any{"apply", f.apply, "instances", f.instances.String()}}, nil
}
