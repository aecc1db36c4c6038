package cli

import (
	"errors"
	"fmt"
	"io"
	"io/fs"
	"log/slog"
	"os"
	"path/filepath"
	"strconv"

	"github.com/spf13/pflag"

	"github.com/haproxy-k8s-sync/haproxy-k8s-sync/internal/atomicfile"
	"github.com/haproxy-k8s-sync/haproxy-k8s-sync/internal/driver"
	"github.com/haproxy-k8s-sync/haproxy-k8s-sync/internal/driver/runtimeapi"
	"github.com/haproxy-k8s-sync/haproxy-k8s-sync/internal/driver/tproxy"
	"github.com/haproxy-k8s-sync/haproxy-k8s-sync/internal/model"
	"github.com/haproxy-k8s-sync/haproxy-k8s-sync/internal/render"
)

// listenerFlags choose how TCP connections reach HAProxy
// (docs/listeners.md): a frontend per Service port, or one fixed listener
// the kernel hands them to through TPROXY.
type listenerFlags struct {
	mode  string
	port  int
	netns string
	// http, httpPort: --http-listener (on by default: in tproxy mode the
	// plain HTTP frontends are behind the fixed HTTP listener unless
	// --http-listener=false), --http-listener-port.
	http     bool
	httpPort int
	// httpsPort: --https-listener-port, the fixed HTTPS listener's port
	// (render/httpslistener.go: with --http-listener in tproxy mode).
	httpsPort int
	// given: --listeners was given (flag or environment), not the
	// default auto.
	given bool
	// probed: removes what auto's probe or the tproxy driver put in
	// place, if run fails before its loop starts (undoProbe); nil once
	// it starts.
	probed tproxy.Undo
}

// listenerMode is --listeners: ports, tproxy or auto (listenersauto.go),
// nothing else.
type listenerMode struct{ l *listenerFlags }

func (v listenerMode) String() string { return v.l.mode }
func (v listenerMode) Type() string   { return "string" }
func (v listenerMode) Set(s string) error {
	if s != render.ListenersPorts && s != render.ListenersTProxy && s != listenersAuto {
		return fmt.Errorf("want %s, %s or %s, got %s", render.ListenersPorts, render.ListenersTProxy, listenersAuto, strconv.Quote(s))
	}
	v.l.mode, v.l.given = s, true
	return nil
}

// portValue is a port of 1-65535.
type portValue struct{ p *int }

func (v portValue) String() string { return strconv.Itoa(*v.p) }
func (v portValue) Type() string   { return "int" }
func (v portValue) Set(s string) error {
	n, err := strconv.Atoi(s)
	if err != nil || n < 1 || n > 65535 {
		return fmt.Errorf("want a port of 1-65535, got %s", strconv.Quote(s))
	}
	*v.p = n
	return nil
}

func (l *listenerFlags) register(fs *pflag.FlagSet) {
	l.mode, l.port = listenersAuto, render.DefaultListenerPort
	fs.Var(listenerMode{l}, "listeners", "how TCP connections reach HAProxy: 'ports' (a frontend and bind per Service port: a new address or port is a reload) or 'tproxy' (one fixed listener; the kernel hands it every address and port served through TPROXY in the table inet "+tproxy.Table+", the backend found in a map: a new address or port is no reload; needs CAP_NET_ADMIN; docs/listeners.md) or 'auto', the default (run: tproxy, with a pool of ready backends, where the controller can set it up, ports otherwise, said at start; render and init: ports)")
	fs.Var(portValue{&l.port}, "listener-port", "the fixed listener's port with --listeners=tproxy (on every address, refusing what its map does not name)")
	l.httpPort = render.DefaultHTTPListenerPort
	fs.BoolVar(&l.http, "http-listener", true, "with --listeners=tproxy (or auto choosing it), put the plain HTTP listeners (no TLS termination: Gateway HTTP listeners, Ingresses' HTTP) behind one fixed HTTP listener too, so that a new Gateway or HTTP listener on a new address and port is no reload (docs/listeners.md); --http-listener=false gives them frontends of their own again (a new address or port: a reload); ignored in ports mode")
	fs.Var(portValue{&l.httpPort}, "http-listener-port", "the fixed HTTP listener's port with --listeners=tproxy --http-listener")
	l.httpsPort = render.DefaultHTTPSListenerPort
	fs.Var(portValue{&l.httpsPort}, "https-listener-port", "the fixed HTTPS listener's port with --listeners=tproxy --http-listener (the TLS-terminating Gateway HTTPS listeners it can share)")
}

// portClash refuses two fixed listeners on one port: both frontends
// would bind it (SO_REUSEPORT) and the kernel would share their
// connections between them. Ports mode (auto too may choose tproxy) has
// no HTTP or HTTPS listener.
func (l listenerFlags) portClash() error {
	if !l.http || l.mode == render.ListenersPorts {
		return nil
	}
	if l.httpPort == l.port {
		return flagErr("--http-listener-port %d: the TCP listener's --listener-port too (choose another, or --http-listener=false)", l.httpPort)
	}
	for _, o := range []struct {
		port int
		flag string
	}{{l.port, "the TCP listener's --listener-port"}, {l.httpPort, "the HTTP listener's --http-listener-port"}} {
		if l.httpsPort == o.port {
			return flagErr("--https-listener-port %d: %s too (choose another, or --http-listener=false)", l.httpsPort, o.flag)
		}
	}
	return nil
}

// renderListeners are the render options' listeners of the flags: the
// HTTP listener only in tproxy mode (ports mode has none, whatever
// --http-listener, on by default, says).
func (l listenerFlags) renderListeners() render.Listeners {
	http := l.http && l.mode == render.ListenersTProxy
	return render.Listeners{Mode: l.mode, Port: uint16(l.port), HTTP: http, HTTPPort: uint16(l.httpPort), HTTPSPort: uint16(l.httpsPort)}
}

// registerRun registers what only run uses.
func (l *listenerFlags) registerRun(fs *pflag.FlagSet) {
	fs.StringVar(&l.netns, "listener-netns", "", "network namespace (a path, e.g. /run/netns/lb) holding the TPROXY table and policy routing of --listeners=tproxy; default the controller's own")
}

// options are the render options of the mode; configPath is the
// haproxy.cfg whose ACL directory holds the listener's maps.
func (l listenerFlags) options(ropts render.Options, configPath string) render.Options {
	ropts.Listeners = l.renderListeners()
	if l.mode == render.ListenersTProxy && ropts.ACLDir == "" {
		ropts.ACLDir = runtimeapi.ACLDir(configPath)
	}
	return ropts
}

// refuseTProxy refuses tproxy mode where nothing would run the kernel's
// side of it: --mode=apiserver keeps its own frontend.
func (l listenerFlags) refuseTProxy(mode string) error {
	if l.mode == render.ListenersTProxy && mode == modeAPIServer {
		return flagErr("--listeners=tproxy: --mode=apiserver keeps its own frontend; use --listeners=ports")
	}
	return nil
}

// wrap is the local HAProxy's driver in the chosen mode: itself, or in
// tproxy mode ordered with the kernel's driver of the listener's set
// (tproxy.Ordered). Said at start either way.
func (f *runFlags) wrapListeners(hd *runtimeapi.HAProxy, log *slog.Logger) (driver.Driver, func(), error) {
	l := f.listeners
	if l.mode != render.ListenersTProxy {
		log.Info("TCP listeners: a frontend per Service port", "listeners", l.mode)
		return hd, func() {}, nil
	}
	ropts := l.options(f.renderOptions(), f.config)
	if ropts.ACLDir == "" {
		return nil, nil, flagErr("--listeners=tproxy: the directory beside --haproxy-config %s cannot hold the listener's maps (a path HAProxy reads whole is needed)", f.config)
	}
	ropts = withCertDir(ropts, f.config) // the HTTPS listener's sets follow it
	kopts := tproxy.Options{NetNS: l.netns, Render: ropts, Logger: log}
	if f.listeners.probed == nil { // --listeners=tproxy: no probe before
		f.listeners.probed = tproxy.Since(kopts)
	}
	k, err := tproxy.New(kopts)
	if err != nil {
		return nil, nil, fmt.Errorf("--listeners=tproxy: %w", err)
	}
	log.Info("TCP listeners: one fixed listener through TPROXY", "listeners", l.mode, "port", ropts.ListenerPort(), "http_listener", ropts.HTTPListener(), "https_listener", ropts.HTTPSListener(),
		"table", "inet "+tproxy.Table, "maps", filepath.Dir(render.ListenerMapFile(ropts.ACLDir)))
	// The HTTPS listener's claims start from what it serves (its map and
	// crt-list on disk): a restart keeps each name where it was.
	running, err := runtimeapi.RunningHTTPS(ropts)
	if err != nil {
		log.Warn("HTTPS listener: its claims start in name order", "err", err)
	}
	return tproxy.Ordered{HAProxy: hd, Kernel: k, Holds: render.NewHTTPSHolds(running)}, k.Close, nil
}

// defaultConfigPath is run's default --haproxy-config: where render
// places the listener's maps when it writes to stdout.
const defaultConfigPath = "/etc/haproxy/haproxy.cfg"

// renderTProxyFile is the listener's ruleset render -o DIR writes in
// tproxy mode.
const renderTProxyFile = "tproxy.nft"

// writeListenerRules writes DIR/tproxy.nft in tproxy mode (the table and
// policy routing of internal/driver/tproxy for cfg), and removes one an
// earlier render left otherwise.
func (f *renderFlags) writeListenerRules(cfg model.Config, ropts render.Options, stderr io.Writer) error {
	p := filepath.Join(f.dir, renderTProxyFile)
	if !ropts.TProxy() {
		if err := os.Remove(p); err == nil {
			fmt.Fprintln(stderr, "removed", p, "(--listeners=ports)")
		} else if !errors.Is(err, fs.ErrNotExist) {
			return err
		}
		return nil
	}
	v4, v6 := tproxy.Elements(cfg, ropts)
	var http *tproxy.ListenerSets
	if ropts.HTTPListener() {
		h4, h6 := tproxy.HTTPElements(cfg, ropts)
		http = &tproxy.ListenerSets{Port: ropts.HTTPListenerPort(), V4: h4, V6: h6}
	}
	var https *tproxy.ListenerSets
	if ropts.HTTPSListener() {
		s4, s6 := tproxy.HTTPSElements(cfg, ropts)
		https = &tproxy.ListenerSets{Port: ropts.HTTPSListenerPort(), V4: s4, V6: s6}
	}
	if err := atomicfile.Write(p, tproxy.RenderSets(tproxy.DefaultMark, tproxy.ListenerSets{Port: ropts.ListenerPort(), V4: v4, V6: v6}, http, https), 0o644); err != nil {
		return err
	}
	fmt.Fprintln(stderr, "wrote", p)
	return nil
}

// withCertDir is ropts with the local HAProxy driver's certificate
// directory, beside configPath (runtimeapi.NewHAProxy), when it names
// none: init writes the fixed HTTPS listener (render.HTTPSListener) where
// run's first pass has it, so that pass is no reload.
func withCertDir(ropts render.Options, configPath string) render.Options {
	if ropts.CertDir == "" {
		ropts.CertDir = runtimeapi.CertDir(configPath)
	}
	return ropts
}

// initListenerMaps writes the listener's maps, empty, where init's config
// names them (tproxy mode), unless they exist: HAProxy starts with the
// fixed listener refusing everything until run's first pass. With the
// fixed HTTPS listener, its map and tables too, and the crt-list and
// default certificate its bind loads (initHTTPSListener).
func initListenerMaps(ropts render.Options) error {
	if !ropts.TProxy() {
		return nil
	}
	if err := os.MkdirAll(ropts.ACLDir, 0o755); err != nil {
		return err
	}
	files := []string{render.ListenerMapFile(ropts.ACLDir), render.ProxyMapFile(ropts.ACLDir),
		render.ListenerRoutesMapFile(ropts.ACLDir), render.ListenerBackendsMapFile(ropts.ACLDir),
		render.ListenerTLSMapFile(ropts.ACLDir), render.ListenerSNIMapFile(ropts.ACLDir)}
	if ropts.HTTPListener() { // the fixed HTTP listener's, which the config names from the start
		files = append(files, render.HTTPListenerMapFile(ropts.ACLDir))
		for _, kind := range render.HTTPMapKinds {
			files = append(files, render.HTTPMapFile(ropts.ACLDir, render.HTTPListenerFrontend, kind))
		}
	}
	if ropts.HTTPSListener() {
		// Its map, and the client certificate map its rules read
		// (render/clientauth.go: its lines verify for the frontends
		// behind it that verify their clients).
		files = append(files, render.HTTPSListenerMapFile(ropts.ACLDir), render.ClientAuthMapFile(ropts.ACLDir), render.IssuerMapFile(ropts.ACLDir))
		for _, kind := range render.HTTPMapKinds {
			files = append(files, render.HTTPMapFile(ropts.ACLDir, render.HTTPSListenerFrontend, kind))
		}
	}
	for _, p := range files {
		if _, err := os.Stat(p); err == nil {
			continue
		}
		if err := atomicfile.Write(p, nil, 0o644); err != nil {
			return err
		}
	}
	return initHTTPSListener(ropts)
}

// initHTTPSListener writes what the fixed HTTPS listener's bind loads, as
// run's first pass has it with no HTTPS Gateway: the controller's default
// certificate (kept when its file parses) and the crt-list of that one
// line, unless the crt-list exists (run's, naming more).
func initHTTPSListener(ropts render.Options) error {
	if !ropts.HTTPSListener() {
		return nil
	}
	if _, err := runtimeapi.ListenerDefaultCert(ropts.CertDir); err != nil {
		return err
	}
	p := render.CrtListFile(ropts.CertDir, render.HTTPSListenerFrontend)
	if _, err := os.Stat(p); err == nil {
		return nil
	}
	fixed, _, _ := render.HTTPSListenerFront(model.Config{}, ropts)
	return atomicfile.Write(p, render.CrtListContent(ropts, fixed), 0o600)
}

// listenerCleanup is `cleanup --listeners`: the TPROXY table and its
// policy routing, which a stopped controller leaves so that traffic keeps
// flowing.
type listenerCleanup struct {
	listeners bool
	netns     string
}

func (c *listenerCleanup) register(fs *pflag.FlagSet) {
	fs.BoolVar(&c.listeners, "listeners", false, "delete the TPROXY table inet "+tproxy.Table+" and its policy routing (--listeners=tproxy)")
	fs.StringVar(&c.netns, "listener-netns", "", "network namespace (path) holding them; default this process's own")
}

func (c listenerCleanup) run() error {
	if !c.listeners {
		return nil
	}
	return tproxy.Cleanup(c.netns, tproxy.Options{})
}
