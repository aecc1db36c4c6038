package cli

import (
	"errors"
	"log/slog"

	"github.com/haproxy-k8s-sync/haproxy-k8s-sync/internal/driver/runtimeapi"
	"github.com/haproxy-k8s-sync/haproxy-k8s-sync/internal/kubeclient"
	"github.com/haproxy-k8s-sync/haproxy-k8s-sync/internal/render"
)

// checkFlags refuses, before anything touches the kernel (the probe of
// --listeners=auto, the UDP table), what a later step of run would
// refuse in the Services and gateway modes: the flags and what run builds
// from them (the pool of ready backends, the desired state's options, the
// UDP health check, the published addresses, the apiserver's credentials,
// the HAProxy binary). With --listeners=auto they must hold in each mode
// it may choose. A run refused here changed nothing on the host; one
// failing later removes what the probe put in place (undoProbe). The
// apiserver mode probes nothing and checks its own flags.
func (f *runFlags) checkFlags(useDataplane bool, log *slog.Logger) error {
	if f.mode == modeAPIServer {
		return nil
	}
	if f.mode == modeGateway { // --announce refused before (run.go)
		if err := gatewayDrivers(f, useDataplane, log); err != nil {
			return err
		}
	} else if err := f.instances.check(useDataplane, f.statsPage, f.renderOptions(), log); err != nil {
		return err
	}
	for _, mode := range f.listenerModes(useDataplane) {
		p := f.pool
		p.forListeners(mode)
		if _, err := p.policy(); err != nil {
			return err
		}
		s := f.shape
		s.listeners.mode = mode
		if _, err := s.desiredOptions(); err != nil {
			return err
		}
	}
	if err := f.listeners.portClash(); err != nil {
		return err
	}
	if f.apply != runtimeapi.ModeHybrid && f.apply != runtimeapi.ModeReload {
		return flagErr("--apply: want hybrid or reload, got %q", f.apply)
	}
	if _, err := f.udp.check(); err != nil {
		return err
	}
	if _, err := f.publish.addresses(); err != nil {
		return err
	}
	if _, err := kubeclient.Config(f.kube); err != nil {
		return err
	}
	if !useDataplane && len(f.instances) == 0 {
		return f.checkHAProxy(log)
	}
	return nil
}

// listenerModes are the listener modes run may take: --listeners as
// given, or with auto both where its probe would run (tproxy if it
// passes, ports if not), else ports (autoListeners, asked without
// probing).
func (f *runFlags) listenerModes(useDataplane bool) []string {
	if f.listeners.mode != listenersAuto {
		return []string{f.listeners.mode}
	}
	probes := false
	wouldProbe := func() error { probes = true; return errors.New("not probed: checking flags") }
	autoListeners(f.mode, useDataplane, len(f.instances) > 0, runtimeapi.ACLDir(f.config), wouldProbe)
	if probes {
		return []string{render.ListenersTProxy, render.ListenersPorts}
	}
	return []string{render.ListenersPorts}
}
