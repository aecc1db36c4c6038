package render

import (
	"slices"
	"strconv"
	"strings"

	"github.com/haproxy-k8s-sync/haproxy-k8s-sync/internal/model"
)

// The fixed HTTPS listener (issue 29; Listeners.HTTP, tproxy mode, a
// certificate directory): the TLS-terminating HTTP frontends that can
// share one are not in haproxy.cfg. One fixed `mode http` frontend,
// HTTPSListenerFrontend, binds HTTPSListenerPort on every address with
// `transparent` and `ssl crt-list` of ONE fixed crt-list (CrtListFile of
// its name): its first line is a default certificate the controller
// generates (DefaultCertFile, filter `!*`: never served for a name a
// line has), then one line per certificate of the listened frontends,
// its SNI filters their server names. The kernel hands it their
// connections (the sets https4 and https6, internal/driver/tproxy); it
// keys a connection by its original destination as the HTTP listener
// does, refuses a key not in HTTPSListenerMapFile, and reads ONE table,
// each host named "KEY|host" (HTTPListenerView's merge). So a new HTTPS
// Gateway, listener, address or port is crt-list lines (`add ssl
// crt-list`, runtimeapi/certs.go), map entries and a set element: no
// bind, no reload.
//
// The certificate is chosen by the server name alone, whatever the
// address: only frontends whose names no other listened frontend's
// different certificate also matches share it (HTTPSListened).

// HTTPSListenerFrontend names the fixed HTTPS frontend (no model name
// starts with '_').
const HTTPSListenerFrontend = "_https_listeners"

// DefaultHTTPSListenerPort is the fixed HTTPS listener's port when none
// is given.
const DefaultHTTPSListenerPort = 15443

// httpsListenerALPN is what the fixed HTTPS listener offers, the
// Gateways' and Ingresses' HTTPS frontends' choice: a frontend offering
// other protocols keeps its own.
var httpsListenerALPN = []string{"h2", "http/1.1"}

// HTTPSListenerPort is the fixed HTTPS listener's port.
func (o Options) HTTPSListenerPort() uint16 {
	if o.Listeners.HTTPSPort == 0 {
		return DefaultHTTPSListenerPort
	}
	return o.Listeners.HTTPSPort
}

// HTTPSListener reports whether the options put TLS-terminating HTTP
// frontends behind the fixed HTTPS listener: the HTTP listener's, with a
// certificate directory whose files HAProxy reads whole.
func (o Options) HTTPSListener() bool {
	return o.HTTPListener() && o.CertDir != "" && model.ValidFilePath(CrtListFile(o.CertDir, HTTPSListenerFrontend)) &&
		model.ValidFilePath(DefaultCertFile(o.CertDir, HTTPSListenerFrontend))
}

// HTTPSListenerMapFile is the fixed HTTPS listener's map of key to the
// frontend it stands for, under dir.
func HTTPSListenerMapFile(dir string) string { return dir + "/https-listeners.map" }

// httpsShareable reports whether f, on its own, can be served by the
// fixed HTTPS listener: a TLS-terminating HTTP frontend (no passthrough
// splitter, no TCP routes) whose binds the listeners can key, with
// nothing of its own the shared bind and frontend could not keep (client
// certificate verification on a certificate, or on the frontend unless
// verifiesShared; hosts closed for want of it; source ranges, PROXY protocol, maxconn, client
// timeout; other ALPN), and whose every certificate names the server
// names it is for (the shared crt-list's filters; none: names only the
// certificate knows, which no other frontend's can be checked against).
// Only a Gateway's listeners (HTTP.Listeners, their hostnames): an
// Ingress class's HTTPS frontend serves its default certificate
// (--default-ssl-certificate) to names it does not know, which the
// shared bind gives its own default instead.
func (o Options) httpsShareable(f model.Frontend) bool {
	if f.HTTP == nil || f.TLS == nil || len(f.HTTP.Listeners) == 0 || f.HTTP.Passthrough != nil || f.Routed() || strings.HasPrefix(f.Name, "_") ||
		f.Restricted() || f.AcceptProxy || f.MaxConn > 0 || f.TimeoutClient > 0 {
		return false
	}
	t := f.TLS
	if t.Client != nil && !o.verifiesShared(f) || len(t.Closed) > 0 || !slices.Equal(t.ALPN, httpsListenerALPN) || len(t.Certificates) == 0 {
		return false
	}
	for _, c := range t.Certificates {
		if c.Client != nil || !model.ValidCertName(c.Name) || len(c.SNI) == 0 ||
			slices.ContainsFunc(c.SNI, func(s string) bool { return !model.ValidSNI(s) }) {
			return false
		}
	}
	return o.keyable(f)
}

// verifiesShared reports whether f's client verification (TLS.Client)
// can be the fixed HTTPS listener's, on f's lines of its crt-list
// (clientauth.go, hostauth.go): AllowValidOnly on lines (not the
// fallback, whose ignore lists are the bind's and would let other CAs'
// certificates through every line), a CA file that can be written, and
// every name f serves exact and a name of its certificates, so that
// the host checks (HostRequired: Host must be the server name) pin each
// request to a line of f's, verified with f's CA; a client naming none
// of them is refused before a request by the listener's rule for the
// frontends verifying (clientAuthRule).
func (o Options) verifiesShared(f model.Frontend) bool {
	a := f.TLS.Client
	if !ClientAuthOnLines(o) || a.Optional {
		return false
	}
	if _, ok := certClientAuthLine(a, o); !ok {
		return false
	}
	names := map[string]bool{}
	for _, c := range f.TLS.Certificates {
		for _, s := range c.SNI {
			if !model.ValidSNI(s) || s[0] == '*' {
				return false
			}
			names[strings.ToLower(s)] = true
		}
	}
	for _, l := range f.HTTP.Listeners {
		if !names[strings.ToLower(l)] {
			return false
		}
	}
	for _, h := range f.HTTP.Hosts {
		if !names[strings.ToLower(h.Name)] {
			return false
		}
	}
	return true
}

// HTTPSListenerView is cfg as the fixed HTTPS listener serves it: the
// frontends HTTPSListened takes replaced, where the first of them was (at
// the end when there is none: the listener is there before the first
// HTTPS Gateway), by one frontend named HTTPSListenerFrontend: their
// binds (the keys), their tables merged as HTTPListenerView merges them
// (hosts and listener hostnames named "KEY|host"), their certificates
// one each, sorted by name, serving every listened frontend's names of
// it. Its TLS has no Default: its crt-list's default line is the
// controller's certificate. cfg itself is not changed; without the
// HTTPS listener it is returned as is.
func HTTPSListenerView(cfg model.Config, o Options) model.Config {
	fixed, in, ok := HTTPSListenerFront(cfg, o)
	if !ok {
		return cfg
	}
	out := make([]model.Frontend, 0, len(cfg.Frontends)+1)
	first := -1
	for _, f := range cfg.Frontends {
		if !in[f.Name] {
			out = append(out, f)
			continue
		}
		if first < 0 {
			first = len(out)
			out = append(out, model.Frontend{}) // fixed, below
		}
	}
	if first < 0 {
		out = append(out, fixed)
	} else {
		out[first] = fixed
	}
	cfg.Frontends = out
	return cfg
}

// HTTPSListenerFront is HTTPSListenerView's fixed frontend alone, and
// the frontends it stands for (HTTPSListened); ok is false without the
// HTTPS listener. For a caller that needs no copy of cfg's frontends
// (the driver's certificates and HTTP maps: 10,000 Services a pass).
func HTTPSListenerFront(cfg model.Config, o Options) (fixed model.Frontend, in map[string]bool, ok bool) {
	if !o.HTTPSListener() {
		return model.Frontend{}, nil, false
	}
	in = o.HTTPSListened(cfg)
	fixed = model.Frontend{Name: HTTPSListenerFrontend, HTTP: &model.HTTP{}, TLS: &model.TLS{ALPN: slices.Clone(httpsListenerALPN)}}
	seen := map[string]bool{}
	for i := range cfg.Frontends {
		f := &cfg.Frontends[i]
		if f.HTTP == nil || f.TLS == nil || !in[f.Name] { // a Service's frontend: no lookup
			continue
		}
		var keys []string
		for _, b := range f.Binds {
			if k := ListenerKey(b.Addr, b.Port); !seen[k] && !slices.Contains(keys, k) {
				keys = append(keys, k)
			}
		}
		appendListened(&fixed, *f, seen) // httplistener.go
		for _, k := range keys {
			for _, l := range f.HTTP.Listeners {
				fixed.HTTP.Listeners = append(fixed.HTTP.Listeners, k+listenerHostSep+l)
			}
		}
		mergeCerts(fixed.TLS, f.TLS)
	}
	model.Shaped(fixed.HTTP)
	return fixed, in, true
}

// mergeCerts adds t's certificates to the fixed listener's: a
// certificate already there (by name: one Secret) serves t's names too.
// A frontend's client verification (t.Client, verifiesShared) becomes
// its certificates' own (Certificate.Client: their lines verify), under
// names of their own and the CA's (ListenerCertName): one Secret served
// verified and not is two lines.
func mergeCerts(fixed, t *model.TLS) {
	for _, c := range t.Certificates {
		c.Name = ListenerCertName(t, c)
		if t.Client != nil {
			c.Client = t.Client
		}
		i, ok := slices.BinarySearchFunc(fixed.Certificates, c.Name, func(x model.Certificate, n string) int { return strings.Compare(x.Name, n) })
		if !ok {
			c.SNI = slices.Clone(c.SNI)
			fixed.Certificates = slices.Insert(fixed.Certificates, i, c)
			continue
		}
		have := &fixed.Certificates[i]
		for _, s := range c.SNI {
			if !slices.Contains(have.SNI, s) {
				have.SNI = append(have.SNI, s)
			}
		}
	}
}

// HTTPSListenerEntries are the lines of the fixed HTTPS listener's map
// for cfg (before HTTPSListenerView), sorted by key: each key of a
// listened frontend's binds and the frontend's name, the first frontend
// with a key keeping it.
func HTTPSListenerEntries(cfg model.Config, o Options) []MapEntry {
	in := o.HTTPSListened(cfg)
	return listenedEntries(cfg, func(f *model.Frontend) bool { return f.HTTP != nil && f.TLS != nil && in[f.Name] })
}

// listenedEntries are a fixed HTTP or HTTPS listener's map entries: each
// key of the binds of cfg's frontends listened takes to the frontend's
// name, the first frontend with a key keeping it, sorted by key.
func listenedEntries(cfg model.Config, listened func(*model.Frontend) bool) []MapEntry {
	var out []MapEntry
	seen := map[string]bool{}
	for i := range cfg.Frontends {
		f := &cfg.Frontends[i]
		if !listened(f) {
			continue
		}
		for _, b := range f.Binds {
			if k := ListenerKey(b.Addr, b.Port); !seen[k] {
				seen[k] = true
				out = append(out, MapEntry{k, f.Name})
			}
		}
	}
	slices.SortFunc(out, func(a, b MapEntry) int { return cmpString(a.Key, b.Key) })
	return out
}

// writeKeyedBinds writes a fixed HTTP or HTTPS listener's binds on port
// (with args after each: the HTTPS listener's TLS) and the rules that key
// a connection, refusing a key not in kmap before a byte is read.
func writeKeyedBinds(w func(...string), port uint16, kmap, args string) {
	p := strconv.Itoa(int(port))
	w("\tbind :" + p + " transparent" + args)
	w("\tbind [::]:" + p + " v6only transparent" + args)
	w("\ttcp-request connection set-var-fmt(" + httpListenerVar + ") \"%[dst]:%[dst_port]\"")
	w("\ttcp-request connection reject unless { var(" + httpListenerVar + "),map_str(" + kmap + ") -m found }")
}

// writeKeyedMisdirected is writeMisdirected (httpext.go) for the fixed
// HTTPS listener: its listener hostnames are named "KEY|host", so the
// Host and the server name are looked up under the connection's key.
func writeKeyedMisdirected(w func(...string), listenersMap string) {
	writeMisdirectedBy(w, listenersMap, writeKeyedHostLookup) // httpext.go
}

// writeKeyedHostLookup is writeHostLookup with every name led by the
// connection's listener key.
func writeKeyedHostLookup(w func(...string), src, dst, mapFile, cond string) {
	lk := "%[var(" + httpListenerVar + ")]" + listenerHostSep
	look := func(name, c string) {
		w("\thttp-request set-var-fmt(txn.lw) \"" + lk + name + "\"" + c)
		w("\thttp-request set-var(" + dst + ") var(txn.lw),map_str(" + mapFile + ")" + c)
	}
	first := ""
	if cond != "" {
		first = " if" + cond
	}
	look("%[var("+src+")]", first)
	missing := " if !{ var(" + dst + ") -m found }" + cond
	for i := 2; i < 2+WildcardDepth; i++ {
		look("*.%[var("+src+"),field("+strconv.Itoa(i)+",.,0)]", missing)
	}
	look(model.AnyHost, missing)
}
