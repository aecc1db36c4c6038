// Package render turns the model into haproxy.cfg text. It is a pure
// function: the same model, layout and options always give the same bytes,
// and every value it writes comes from the validated model.
package render

import (
	"bufio"
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"io"
	"net/netip"
	"slices"
	"strconv"

	"github.com/haproxy-k8s-sync/haproxy-k8s-sync/internal/model"
	"github.com/haproxy-k8s-sync/haproxy-k8s-sync/internal/settings"
)

// Options shape the parts of the config that do not come from Services.
type Options struct {
	StatsSocket string // worker admin socket path
	StateFile   string // server-state-file path
	MaxConn     int    // global maxconn; 0 leaves HAProxy's default
	// Monitor, when valid, is where a frontend answers GET /healthz with
	// 200 while HAProxy runs (a liveness probe's target).
	Monitor netip.AddrPort
	// Stats, when its Port is set, is where HAProxy serves its stats page
	// and Prometheus exporter (see writeStats); StatsAuth protects them.
	Stats     model.Bind
	StatsAuth StatsAuth
	// ACLDir, when set (an absolute path checked with
	// model.ValidFilePath), holds two files per frontend with source
	// ranges, one per family (ACLFile), which its rule reads: the ranges are then not in
	// the config, and the driver changes them through the Runtime API
	// with no reload. Empty: the ranges are written inline. The routes
	// of routed frontends read their backends from map files there too
	// (RouteMapFile), changed the same way.
	ACLDir string
	// Peer, when valid (a loopback address and port), is HAProxy's local
	// peer: with a backend with Affinity, the config has a peers section
	// with the local peer alone, and the stick tables name it, so that a
	// reload hands their contents from the old worker to the new one
	// (clients keep their server across reloads). Invalid: stick tables
	// start empty after a reload.
	Peer netip.AddrPort
	// Legacy, when not zero, writes the model as an older release did
	// (upgrade.go): a driver keeps that while HAProxy runs such a config,
	// rather than reloading only to change how the same model is written.
	Legacy Legacy
	// Quiet renders HAProxy's `quiet`: no line on stderr per server
	// changing state (thousands for one node's flip), but no [ALERT] of a
	// start or reload either, on 2.6 and 3.4 alike; the driver explains a
	// failed reload itself (runtimeapi explain.go). docs/health-checks.md.
	Quiet bool
	// CertDir, when set (an absolute path checked with
	// model.ValidFilePath), holds the certificates and crt-lists of the
	// frontends that terminate TLS (tls.go). Empty: such a frontend is
	// written without binds.
	CertDir string
	// Listeners is the listener mode (listeners.go): per-port frontends,
	// or one fixed listener the kernel hands every connection to.
	Listeners Listeners
	// DynamicBackends: the HAProxy that loads the config creates
	// backends at runtime (3.4+): the backends a class's named defaults
	// can describe are written from it, after every other section, and
	// are no structure (dynamic.go).
	DynamicBackends bool
	// ConnectPerRequest: the HAProxy that loads the config sets a connect
	// timeout per request (3.4+: haproxy.Version.ConnectPerRequest). An
	// HTTP frontend looks the action's up in its timeouts map and every
	// HTTP backend sets it (httpext.go), so a new connect timeout is map
	// data, no backend of its own.
	ConnectPerRequest bool
	// RuntimeSlots: a spare's free slots after its last one in use are
	// not written (one comment names them) but created at runtime when a
	// server needs one (runtimeslots.go). The structure hash is the same
	// either way.
	RuntimeSlots bool
}

// Peers names the peers section and the local peer (writePeers). The
// section's name cannot be a backend's (those start with a letter or
// digit).
const (
	PeersSection = "_peers"
	LocalPeer    = "hks"
)

// FreeSlotAddr is where an unused slot points. It is never contacted: free
// slots are in maintenance.
const FreeSlotAddr = "127.0.0.1:1"

// DescriptionPrefix starts the global description, which carries the
// structure hash so the controller can tell what a running HAProxy loaded
// (`show info` reports it).
const DescriptionPrefix = "hks:"

// Config renders the complete haproxy.cfg.
func Config(cfg model.Config, layout model.Layout, opts Options) []byte {
	return render(cfg, layout, opts, StructureHash(cfg, layout, opts))
}

// ConfigWithHash is Config for a caller that already knows
// StructureHash(cfg, layout, opts) (from a HashMemo): it renders once
// instead of twice.
func ConfigWithHash(cfg model.Config, layout model.Layout, opts Options, hash string) []byte {
	return render(cfg, layout, opts, hash)
}

// StructureHash identifies everything in the config that can only change
// through a reload: sections, settings and slot names, but not which server
// a slot points at or its state.
func StructureHash(cfg model.Config, layout model.Layout, opts Options) string {
	// The skeleton goes straight into the hash: megabytes at tens of
	// thousands of backends, never held.
	h := sha256.New()
	bw := bufio.NewWriterSize(h, 32<<10)
	build(bw, cfg, layout, opts, "", true)
	_ = bw.Flush() // a hash never fails to write
	return hex.EncodeToString(h.Sum(nil)[:8])
}

// Empty renders a config with no Services: what `init` writes so HAProxy
// can start before the first sync.
func Empty(opts Options) []byte {
	return Config(model.Config{}, nil, opts)
}

// writer is what build writes to: a bytes.Buffer for a config, a
// bufio.Writer over a hash for the structure hash.
type writer interface {
	WriteString(string) (int, error)
	WriteByte(byte) error
}

// WriteConfig is ConfigWithHash written to w (through a buffer), without
// holding the text, which is megabytes at tens of thousands of Services.
// It returns the SHA-256 digest of what it wrote.
func WriteConfig(w io.Writer, cfg model.Config, layout model.Layout, opts Options, hash string) (digest [sha256.Size]byte, err error) {
	h := sha256.New()
	bw := bufio.NewWriterSize(io.MultiWriter(w, h), 64<<10)
	build(bw, cfg, layout, opts, hash, false)
	if err := bw.Flush(); err != nil {
		return digest, err
	}
	h.Sum(digest[:0])
	return digest, nil
}

// render builds the config into one buffer whose bytes are the result.
func render(cfg model.Config, layout model.Layout, opts Options, hash string) []byte {
	var b bytes.Buffer
	b.Grow(256 + 200*len(cfg.Frontends) + 300*len(cfg.Backends))
	build(&b, cfg, layout, opts, hash, false)
	return b.Bytes() // no final copy
}

func build(b writer, cfg model.Config, layout model.Layout, opts Options, hash string, skeleton bool) {
	w := func(parts ...string) {
		for i, p := range parts {
			if i > 0 {
				b.WriteByte(' ')
			}
			b.WriteString(p)
		}
		b.WriteByte('\n')
	}
	if opts.HTTPListener() {
		cfg = HTTPListenerView(cfg, opts)  // httplistener.go: the plain HTTP frontends behind one
		cfg = HTTPSListenerView(cfg, opts) // httpslistener.go: the TLS-terminating ones that can share one
	}
	b.WriteString("# Generated by haproxy-k8s-sync. Do not edit: changes are overwritten.\n")
	w("global")
	w("\tmaster-worker")
	if opts.Quiet {
		w("\tquiet")
	}
	if opts.StatsSocket != "" {
		w("\tstats socket", opts.StatsSocket, "mode 600 level admin expose-fd listeners")
		w("\tstats timeout 10m")
	}
	if opts.StateFile != "" {
		w("\tserver-state-file", opts.StateFile)
	}
	if opts.MaxConn > 0 {
		w("\tmaxconn", strconv.Itoa(opts.MaxConn))
	}
	peers := withPeers(cfg, opts)
	if peers {
		w("\tlocalpeer", LocalPeer)
	}
	if ExtAuthLoaded(cfg, opts) {
		w("\tlua-load", ExtAuthLuaFile(opts.ACLDir)) // extauth.go
	} else if opts.Legacy&HTTPClientCA == 0 {
		// No Lua: nothing asks HAProxy's HTTP client (auth-url's Lua is
		// its one user in what we write), so it loads no system CA bundle
		// (every start and reload: 205 M instructions on 2.6.12, issue 29).
		// The same structure change as lua-load: no reload of its own.
		w("\thttpclient.ssl.verify none")
	}
	if !skeleton {
		w("\tdescription", DescriptionPrefix+hash)
	}
	if peers {
		// The local peer alone: nothing is shared with other hosts; a
		// reload's old worker pushes its stick tables to the new one.
		w("")
		w("peers", PeersSection)
		w("\tpeer", LocalPeer, opts.Peer.String())
	}
	w("")
	w("defaults")
	writeDefaults(w, opts)
	writeMonitor(w, opts)
	writeStats(w, opts)
	writeExtAuthFrontend(w, cfg, opts) // extauth.go
	if opts.TProxy() {
		writeListener(w, opts)
	}
	for _, f := range cfg.Frontends {
		if opts.Listened(f) {
			continue // served by the fixed listener (listeners.go)
		}
		w("")
		tlsArgs, tlsOK := tlsBind(f, opts)
		pass := tlsOK && passthroughOn(f, opts)
		if pass {
			writePassthrough(w, f, opts) // passthrough.go: the splitter takes the binds
		}
		w("frontend", f.Name)
		if !tlsOK {
			w("\t# no certificate directory: TLS termination not bound")
		}
		if pass {
			w("\tbind " + passSocket(f.Name, opts) + " accept-proxy" + tlsArgs)
		}
		if f.Name == HTTPListenerFrontend {
			writeHTTPListenerBinds(w, opts) // httplistener.go: its binds are the keys
		} else if f.Name == HTTPSListenerFrontend && tlsOK {
			writeKeyedBinds(w, opts.HTTPSListenerPort(), HTTPSListenerMapFile(opts.ACLDir), tlsArgs) // httpslistener.go
		}
		for _, bd := range f.Binds {
			if !tlsOK || pass || f.Name == HTTPListenerFrontend || f.Name == HTTPSListenerFrontend {
				break
			}
			line := "\tbind " + bindAddr(bd)
			if bd.Transparent {
				line += " transparent"
			}
			if f.AcceptProxy {
				line += " accept-proxy"
			}
			w(line + tlsArgs)
		}
		if rule := clientAuthRule(f, opts); rule != "" && tlsOK {
			w(rule) // clientauth.go
		}
		if f.MaxConn > 0 {
			w("\tmaxconn", strconv.Itoa(f.MaxConn))
		}
		if f.Restricted() {
			w("\t" + sourceRule(f, opts))
		}
		if f.TimeoutClient > 0 {
			w("\ttimeout client", settings.FormatDuration(f.TimeoutClient))
		}
		if f.HTTP != nil {
			writeHTTP(w, f, opts.ACLDir, opts.ConnectPerRequest)
		} else if f.Routed() {
			writeRoutes(w, f, opts.ACLDir)
		} else {
			w("\tdefault_backend", f.Backend)
		}
	}
	// The unbound slots of a following backend carry no check: HAProxy
	// reserves a file descriptor for every server configured with one,
	// in maintenance or not (fds.go), three per backend at the least.
	// The older rendering that checked them is LooseChecked.
	nodeCheck, looseArgs := cfg.NodeCheck(), ""
	if nodeCheck.Enabled && opts.Legacy&LooseChecked != 0 {
		looseArgs = checkArgs(nodeCheck)
	}
	agentInter := settings.FormatDuration(cfg.NodesAgentInter())
	listenedSrc := listenedSources(cfg, opts)
	dyn := dynamicBackends(cfg, opts, listenedSrc)
	for _, be := range cfg.Backends {
		if _, ok := dyn.from[be.Name]; ok {
			continue // after every other section, from its class (dynamic.go)
		}
		w("")
		w("backend", be.Name)
		if be.HTTP {
			w("\tmode http")
			w(httpBackendTimeout) // httpext.go
			if opts.ConnectPerRequest {
				w(httpBackendConnect)
			}
			if be.H2C {
				w(httpH2CServers)
			}
			writeBackendTLS(w, be, opts) // backendtls.go
			writeCookie(w, be)           // cookie.go
			writeHTTPRetry(w, be)        // retry.go
		}
		if !skeleton && be.Name[0] == '_' && be.Service != "" {
			// A spare of the pool (internal/spares) says whose it is: the
			// file names what runs; not structure, a spare changes hands
			// with no reload.
			w("\t# serves", be.Service)
		}
		if be.Name == model.NodesBackend && !be.Check.Enabled {
			// No traffic goes here: a server per node, for the servers of
			// backends with TrackNodes to follow ("track"). HAProxy tracks
			// only a server with a check or an agent: an agent that never
			// answers (port 1 on loopback, privileged, nothing listens)
			// leaves the node up, as only an agent's answer can take a
			// server down. Its state comes from the Runtime API.
			// Its interval is never the longest wait of a check's first
			// run after a reload (model.Config.NodesAgentInter).
			w("\tdefault-server agent-check agent-addr 127.0.0.1 agent-port 1 agent-inter " + agentInter)
		} else if be.Name == model.NodesBackend {
			// The node check (--node-check): each node is checked once
			// here, and every server following it goes down with it.
		} else {
			w("\tbalance", be.Balance)
		}
		if be.Balance == "source" || model.HashedBalance(be.Balance) {
			w("\thash-type consistent")
		}
		if opts.SpareRanged(be) {
			w("\t" + backendSourceRule(be.Name, opts))
		}
		for _, f := range listenedSrc[be.Name] {
			w("\t" + backendSourceRule(f.Name, opts))
		}
		if be.Affinity > 0 {
			// ClientIP affinity: a client's source address keeps the
			// server it first went to until it has been gone this long.
			// IPv6 keys hold IPv4 clients too (mapped).
			line := "\tstick-table type ipv6 size 1m expire " + settings.FormatDuration(be.Affinity)
			if peers {
				line += " peers " + PeersSection
			}
			w(line)
			w("\tstick on src")
		}
		if be.TimeoutConnect > 0 {
			w("\ttimeout connect", settings.FormatDuration(be.TimeoutConnect))
		}
		if be.TimeoutServer > 0 {
			w("\ttimeout server", settings.FormatDuration(be.TimeoutServer))
		}
		// loose is the node check that the slots of a following backend
		// bound to no node carry in the LooseChecked rendering (none in
		// the current one).
		loose := ""
		if be.TrackNodes && !be.Check.Enabled {
			loose = looseArgs
		}
		// hc is the check the backend's servers run: their own, or the
		// node check of its loose slots.
		hc := be.Check
		if loose != "" {
			hc = nodeCheck
		}
		if hc.Enabled && hc.HTTP.Path != "" {
			w("\toption httpchk GET", hc.HTTP.Path)
			w("\thttp-check expect status 200")
		}
		if ds := defaultServer(be); ds != "" {
			w("\tdefault-server" + ds)
		}
		slots := layout[be.Name]
		if !skeleton {
			n := FileSlots(be, slots, opts)
			writeRuntimeSlots(w, slots, n) // runtimeslots.go
			slots = slots[:n]
		}
		for i, s := range slots {
			// A slot bound to its node's slot follows it; one bound to
			// none (a server of a node that had no free bound slot since
			// the last reload, or a free slot that may take one) carries
			// its node's maintenance, set by the plan, until a reload
			// binds it.
			track := loose
			if s.Track != 0 {
				track = " track " + model.NodesBackend + "/" + model.SlotName(int(s.Track)-1)
			}
			writeSlot(w, model.SlotName(i), s, track+slotCookie(be, model.SlotName(i)), skeleton)
		}
	}
	writeDynamic(w, cfg, layout, dyn, opts, skeleton)
}

// writeDefaults writes the settings every defaults section starts with.
func writeDefaults(w func(...string), opts Options) {
	w("\tmode tcp")
	w("\ttimeout connect 5s")
	w("\ttimeout client 1m")
	w("\ttimeout server 1m")
	w("\tretries 2")
	w("\toption redispatch")
	if opts.StateFile != "" {
		w("\tload-server-state-from-file global")
	}
}

// writeSlot writes one server slot, name (track: its keywords, "": none).
func writeSlot(w func(...string), name string, s model.Slot, track string, skeleton bool) {
	switch {
	case skeleton:
		w("\tserver", name+track)
	case s.WantMaint() && s.Used:
		w("\tserver", name, addrPort(s.Server.Addr, s.Server.Port), "disabled"+track)
	case s.Used && s.Server.Drain:
		// No config keyword drains a server: the Runtime API and the
		// server-state file carry it. The comment tells the reader.
		w("\tserver", name, addrPort(s.Server.Addr, s.Server.Port)+track, "# drain")
	case s.Used:
		w("\tserver", name, addrPort(s.Server.Addr, s.Server.Port)+track)
	default:
		w("\tserver", name, FreeSlotAddr, "disabled"+track)
	}
}

// withPeers reports whether the config has the peers section: a socket
// for it, and a stick table to keep.
func withPeers(cfg model.Config, opts Options) bool {
	return opts.Peer.IsValid() && opts.Peer.Addr().IsLoopback() && opts.Peer.Port() != 0 &&
		slices.ContainsFunc(cfg.Backends, func(b *model.Backend) bool { return b.Affinity > 0 })
}

func bindAddr(bd model.Bind) string {
	if !bd.Addr.IsValid() {
		return ":" + strconv.Itoa(int(bd.Port))
	}
	return addrPort(bd.Addr, bd.Port)
}

func addrPort(a netip.Addr, port uint16) string {
	return netip.AddrPortFrom(a, port).String() // [v6]:port, v4:port
}
