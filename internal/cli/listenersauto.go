package cli

import (
	"fmt"
	"io"
	"log/slog"

	"github.com/haproxy-k8s-sync/haproxy-k8s-sync/internal/driver/runtimeapi"
	"github.com/haproxy-k8s-sync/haproxy-k8s-sync/internal/driver/tproxy"
	"github.com/haproxy-k8s-sync/haproxy-k8s-sync/internal/render"
)

// listenersAuto is --listeners=auto (docs/listeners.md): run takes the
// fixed listener through TPROXY where the controller can set it up, and
// per-port frontends otherwise, and says which at start and why. render
// and init, which run nowhere in particular, write the per-port files
// and say so (--listeners=tproxy renders the other mode).
const listenersAuto = "auto"

// autoListeners is the mode --listeners=auto takes for run, and why:
// per-port frontends where nothing would run the kernel's side (the
// apiserver mode's own frontend, the Data Plane API driver, several
// --instance), where the listener's maps have no directory beside the
// config, or where probe fails (tproxy.Probe: no CAP_NET_ADMIN, no
// nftables or TPROXY in the kernel, no policy routing); tproxy otherwise.
func autoListeners(mode string, dataplane, instances bool, aclDir string, probe func() error) (chosen, why string) {
	switch {
	case mode == modeAPIServer:
		return render.ListenersPorts, "the apiserver mode keeps its own frontend"
	case dataplane:
		return render.ListenersPorts, "the Data Plane API driver has no fixed listener"
	case instances:
		return render.ListenersPorts, "the fixed listener serves one local HAProxy, not --instance"
	case aclDir == "":
		return render.ListenersPorts, "the directory beside --haproxy-config cannot hold the listener's maps"
	}
	if err := probe(); err != nil {
		return render.ListenersPorts, "TPROXY cannot be set up here: " + err.Error()
	}
	return render.ListenersTProxy, "TPROXY set up: CAP_NET_ADMIN, nftables with TPROXY, policy routing"
}

// resolveListeners turns run's --listeners=auto into the mode every later
// step reads (render options, the desired state's shape, the drivers),
// said in one log line. Another mode is left as given.
func (f *runFlags) resolveListeners(dataplane bool, log *slog.Logger) {
	l := &f.listeners
	if l.mode != listenersAuto {
		return
	}
	aclDir := runtimeapi.ACLDir(f.config)
	var undo tproxy.Undo
	probe := func() (err error) {
		ropts := l.optionsIn(render.ListenersTProxy, f.renderOptions(), f.config)
		undo, err = tproxy.Probe(tproxy.Options{NetNS: l.netns, Render: ropts, Logger: log})
		return err
	}
	chosen, why := autoListeners(f.mode, dataplane, len(f.instances) > 0, aclDir, probe)
	l.mode = chosen
	if chosen == render.ListenersTProxy {
		l.probed = undo
	}
	log.Info("TCP listeners chosen", "listeners", listenersAuto, "chose", chosen, "why", why)
}

// undoProbe removes what the probe of --listeners=auto (or, with
// --listeners=tproxy, the driver) put in place when run fails (err)
// before its loop starts: a run that never served leaves nothing on the
// host (what an earlier controller left stays: tproxy.Undo). Once the
// loop runs (keepProbed) the table and the policy routing stay when it
// stops, so that traffic keeps flowing (`cleanup --listeners` removes
// them).
func (l *listenerFlags) undoProbe(err error, log *slog.Logger) {
	undo := l.probed
	if err == nil || undo == nil {
		return
	}
	l.probed = nil
	if uerr := undo(); uerr != nil {
		log.Error("run failed before starting; removing what the TPROXY probe set up failed too", "err", uerr)
		return
	}
	log.Info("run failed before starting: removed what the TPROXY probe set up", "table", "inet "+tproxy.Table)
}

// keepProbed keeps what the probe put in place: the loop starts.
func (l *listenerFlags) keepProbed() { l.probed = nil }

// offlineListeners is render's and init's --listeners=auto: the per-port
// files, said on stderr when auto was asked for (not the default).
func (l *listenerFlags) offlineListeners(stderr io.Writer) {
	if l.mode != listenersAuto {
		return
	}
	l.mode = render.ListenersPorts
	if !l.given {
		return
	}
	fmt.Fprintln(stderr, "--listeners=auto: per-port frontends written; run takes the fixed listener through TPROXY where it can set it up (--listeners=tproxy writes that mode)")
}

// optionsIn is options in mode.
func (l listenerFlags) optionsIn(mode string, ropts render.Options, configPath string) render.Options {
	l.mode = mode
	return l.options(ropts, configPath)
}
