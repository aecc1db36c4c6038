package cli

import (
	"context"
	"errors"
	"log/slog"
	"time"

	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	gwclient "sigs.k8s.io/gateway-api/pkg/client/clientset/versioned"

	"github.com/haproxy-k8s-sync/haproxy-k8s-sync/internal/gateway"
	"github.com/haproxy-k8s-sync/haproxy-k8s-sync/internal/gatewayctl"
	"github.com/haproxy-k8s-sync/haproxy-k8s-sync/internal/kubeclient"
	"github.com/haproxy-k8s-sync/haproxy-k8s-sync/internal/source"
)

// modeGateway is `run --mode=gateway`: the Gateway API (docs/gateway.md).
const modeGateway = "gateway"

// runGateway is `run --mode=gateway`: Gateways of the GatewayClasses
// whose controllerName is gateway.ControllerName, their TCP and TLS
// listeners on the local HAProxy, UDP listeners on the nftables table.
func runGateway(ctx context.Context, f *runFlags, useDataplane bool, log *slog.Logger) error {
	if useDataplane || len(f.instances) > 0 {
		return errors.New("--mode=gateway drives one local HAProxy (--driver=haproxy); the Data Plane API and --instance are not supported yet")
	}
	dopts, err := f.desiredOptions()
	if err != nil {
		return err
	}
	udp, udpCaps, err := f.udp.setup(ctx, log)
	if err != nil {
		return err
	}
	dopts = driverChoice{label: driverHAProxy, kinds: []string{driverHAProxy}}.capabilities(udpCaps).shape(dopts)
	cfg, err := kubeclient.Config(f.kube)
	if err != nil {
		return err
	}
	client, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		return err
	}
	gc, err := gwclient.NewForConfig(cfg)
	if err != nil {
		return err
	}
	hd, stop, err := f.single(log)
	if err != nil {
		return err
	}
	defer stop()
	if err := ensureDir(f.stateFile, "--state-file"); err != nil {
		return err
	}
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
	if f.publish.pools {
		dyn, err := dynamic.NewForConfig(cfg)
		if err != nil {
			return err
		}
		src.WithPools(dyn)
	}
	scfg := rest.CopyConfig(cfg)
	scfg.QPS, scfg.Burst = -1, 0
	sclient, err := gwclient.NewForConfig(rest.AddUserAgent(scfg, "status"))
	if err != nil {
		return err
	}
	pub := gatewayctl.NewPublisher(sclient, src, gatewayctl.PublisherOptions{QPS: float32(f.publish.qps), Burst: f.publish.burst, Logger: log, RouteVersions: routes})
	loop := gatewayctl.New(src, compose(hd, udp), gatewayctl.Options{
		Gateway:      gateway.Options{Addresses: dopts.Binds, UDP: dopts.UDP, Pooled: f.publish.pools},
		ResyncPeriod: f.resync,
		SyncTimeout:  f.syncTimeout,
		Publisher:    pub,
		Logger:       log,
	})
	inst := f.metrics.instance(driverHAProxy)
	ready := &readiness{synced: loop.Synced, inst: inst, socket: f.stats}
	if err := f.metrics.serve(ctx, ready.ready, log); err != nil {
		return err
	}
	_, gate := f.publish.recorder(nil)
	if err := f.publish.start(ctx, cfg, gate, []func(context.Context){pub.Run}, loop.Trigger, log); err != nil {
		return err
	}
	go hd.Watch(ctx, time.Second, loop.Trigger)
	log.Info("starting", "version", Version, "mode", modeGateway, "controllerName", gateway.ControllerName, "config", f.config, "udp", udp != nil, "addressPools", f.publish.pools)
	return loop.Run(ctx)
}
