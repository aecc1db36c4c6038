package cli

import (
	"context"
	"log/slog"

	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/rest"
	gwclient "sigs.k8s.io/gateway-api/pkg/client/clientset/versioned"

	"github.com/haproxy-k8s-sync/haproxy-k8s-sync/internal/claims"
	"github.com/haproxy-k8s-sync/haproxy-k8s-sync/internal/gateway"
	"github.com/haproxy-k8s-sync/haproxy-k8s-sync/internal/gatewayctl"
	"github.com/haproxy-k8s-sync/haproxy-k8s-sync/internal/model"
	"github.com/haproxy-k8s-sync/haproxy-k8s-sync/internal/source"
)

// modeGateway is `run --mode=gateway`: the Gateway API (docs/gateway.md).
const modeGateway = "gateway"

// runGateway is `run --mode=gateway`: Gateways of the GatewayClasses
// whose controllerName is gateway.ControllerName, their TCP and TLS
// listeners on the local HAProxy (or on each --instance, all local),
// UDP listeners on the nftables table.
func runGateway(ctx context.Context, f *runFlags, useDataplane bool, getenv func(string) string, log *slog.Logger) error {
	dopts, choice, udp, err := f.shapedOptions(ctx, false, log) // run.go
	if err != nil {
		return err
	}
	outage := source.NewOutage()
	cfg, client, err := watchedClient(f.kube, outage)
	if err != nil {
		return err
	}
	gc, err := gwclient.NewForConfig(cfg)
	if err != nil {
		return err
	}
	var loop *gatewayctl.Loop
	var names []string
	for _, s := range f.instances {
		names = append(names, s.name)
		if err := ensureDir(s.state, "--instance "+s.name+" state"); err != nil {
			return err
		}
	}
	if len(names) > 0 {
		// Called by the instances once the loop runs (after an Apply).
		f.onApplied = func(instance string, cfg model.Config) { loop.InstanceApplied(instance, cfg) }
	} else if err := ensureDir(f.stateFile, "--state-file"); err != nil {
		return err
	}
	b, err := f.build(ctx, choice, dopts, getenv, log, nil)
	if err != nil {
		return err
	}
	defer b.close()
	routes, err := source.RouteVersions(client.Discovery())
	if err != nil {
		return err
	}
	for kind, v := range routes {
		if v == "" {
			log.Warn("route kind not served by the apiserver: not watched (install the Gateway API v1.6 standard CRDs)", "kind", kind)
		} else if v != source.RouteV1 {
			log.Info("route kind served in an older version only: read as "+v, "kind", kind)
		}
	}
	src := source.NewGateway(client, gc, udp != nil, routes)
	src.RelistAfterOutage(outage, log)
	var claimer *claims.Claimer
	if f.publish.pools {
		dyn, err := dynamic.NewForConfig(cfg)
		if err != nil {
			return err
		}
		src.WithPools(dyn)
		kclient, err := statusClient(cfg)
		if err != nil {
			return err
		}
		if claimer, err = newClaimer(ctx, client, kclient, f.publish, src.WithClaims, src, f.metrics.claims(), log); err != nil {
			return err
		}
	}
	scfg := rest.CopyConfig(cfg)
	scfg.QPS, scfg.Burst = -1, 0
	sclient, err := gwclient.NewForConfig(rest.AddUserAgent(scfg, "status"))
	if err != nil {
		return err
	}
	pub := gatewayctl.NewPublisher(sclient, src, gatewayctl.PublisherOptions{QPS: float32(f.publish.qps), Burst: f.publish.burst, Logger: log, RouteVersions: routes})
	rec, gate := f.publish.recorder(f.ingress.recorder(ctx, client))
	ing, err := f.ingress.setup(src, cfg, dopts.Binds, float32(f.publish.qps), f.publish.burst, f.binVersion.ConnectPerRequest(), f.publish.pools, rec, log)
	if err != nil {
		return err
	}
	var beside gatewayctl.Beside
	if ing != nil {
		beside = ing
	}
	loop = gatewayctl.New(src, compose(b.drv, udp), gatewayctl.Options{
		Gateway:      gateway.Options{Addresses: dopts.Binds, UDP: dopts.UDP, Pooled: f.publish.pools},
		ResyncPeriod: f.resync,
		SyncTimeout:  f.syncTimeout,
		Publisher:    pub,
		Instances:    names,
		Claimer:      claimer,
		Beside:       beside,
		Logger:       log,
		// The executable's pages the lists and the start-up's work
		// touched, handed back as in the Services mode (gc.go).
		OnSynced:  func() { pageOutSynced(log) },
		OnApplied: func() { pageOutApplied(log) },
	})
	inst := f.metrics.instance(choice.label)
	if err := f.metrics.serve(ctx, b.ready(loop.Synced, inst), log); err != nil {
		return err
	}
	runs := []func(context.Context){pub.Run, claimer.Run}
	if ing != nil {
		runs = append(runs, ing.Run)
		if reg := f.metrics.reg; reg != nil {
			if err := reg.Register(ing.Collector()); err != nil {
				return err
			}
		}
	}
	if err := f.publish.start(ctx, cfg, gate, runs, loop.Trigger, log); err != nil {
		return err
	}
	b.watch(ctx, loop.Trigger)
	log.Info("starting", append([]any{"version", Version, "mode", modeGateway, "controllerName", gateway.ControllerName, "udp", udp != nil, "addressPools", f.publish.pools}, b.attrs...)...)
	f.listeners.keepProbed()
	return loop.Run(ctx)
}

// gatewayDrivers (checkFlags) refuses the drivers the gateway mode cannot use: the
// Data Plane API (its driver does not render routes), as --driver or as
// an --instance; local HAProxy instances are checked as in the Services
// mode.
func gatewayDrivers(f *runFlags, useDataplane bool, log *slog.Logger) error {
	const why = "the Data Plane API driver cannot serve Gateway routes yet (it has no SNI routing or route maps)"
	if useDataplane {
		return flagErr("--mode=gateway drives local HAProxies (--driver=haproxy, or --instance name=,config=,master=,stats=,state=): %s", why)
	}
	for _, s := range f.instances {
		if s.kind() == driverDataplane {
			return flagErr("--mode=gateway: --instance %s is a Data Plane API: %s; give local HAProxy instances (config=,master=,stats=,state=)", s.name, why)
		}
	}
	return f.instances.check(false, f.statsPage, f.renderOptions(), log)
}
