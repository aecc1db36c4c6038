package render

import (
	"net/netip"
	"slices"
	"strconv"
	"strings"

	"github.com/haproxy-k8s-sync/haproxy-k8s-sync/internal/model"
)

// The fixed HTTP listener (issue 29; Listeners.HTTP, tproxy mode): the
// plain HTTP frontends (no TLS termination: their binds would carry a
// crt-list) are not in haproxy.cfg. One fixed `mode http` frontend,
// HTTPListenerFrontend, binds HTTPListenerPort on every address with
// `transparent`; the kernel hands it every connection to an (address,
// port) of those frontends (an nftables set of its own,
// internal/driver/tproxy). It keys the connection by its original
// destination (ListenerKey), refuses a key not in HTTPListenerMapFile,
// and reads ONE table (HTTPListenerView: every listened frontend's
// table, each host named "KEY|host" for each of its binds' keys), so a
// new Gateway or HTTP listener on a new address and port is host map
// entries and a set element: no bind, no reload. The rules are those of
// every HTTP frontend (http.go), the host looked up under the key.

// HTTPListenerFrontend names the fixed HTTP frontend (no model name
// starts with '_').
const HTTPListenerFrontend = "_http_listeners"

// DefaultHTTPListenerPort is the fixed HTTP listener's port when none is
// given.
const DefaultHTTPListenerPort = 15081

// httpListenerVar holds a connection's key in the fixed HTTP listener.
const httpListenerVar = "sess.hks_hlisten"

// listenerHostSep joins a listener key and a host name in the table of
// the fixed HTTP listener: neither a key nor a valid host has it.
const listenerHostSep = "|"

// HTTPListenerPort is the fixed HTTP listener's port.
func (o Options) HTTPListenerPort() uint16 {
	if o.Listeners.HTTPPort == 0 {
		return DefaultHTTPListenerPort
	}
	return o.Listeners.HTTPPort
}

// HTTPListener reports whether the options put plain HTTP frontends
// behind the fixed HTTP listener.
func (o Options) HTTPListener() bool { return o.TProxy() && o.Listeners.HTTP }

// HTTPListened reports whether f is served by the fixed HTTP listener: a
// plain HTTP frontend (no TLS, no passthrough) whose binds the listeners
// can key (keyable, the TCP listener's test too), and with nothing of its
// own the shared frontend could not keep (source ranges, PROXY protocol,
// maxconn, client timeout: none is a Gateway's).
func (o Options) HTTPListened(f model.Frontend) bool {
	if !o.HTTPListener() || f.HTTP == nil || f.TLS != nil || f.Routed() || f.Name == HTTPListenerFrontend ||
		f.Restricted() || f.AcceptProxy || f.MaxConn > 0 || f.TimeoutClient > 0 {
		return false
	}
	return o.keyable(f)
}

// HTTPListenerMapFile is the fixed HTTP listener's map of key to the
// frontend (the Gateway's listener) it stands for, under dir.
func HTTPListenerMapFile(dir string) string { return dir + "/http-listeners.map" }

// HTTPListenerView is cfg as the fixed HTTP listener serves it: the
// frontends HTTPListened takes replaced, where the first of them was (at
// the end when there is none: the listener is there before the first
// Gateway, which is then no reload either), by one frontend named
// HTTPListenerFrontend whose binds are theirs (the keys of the
// listener's map and set; render writes the fixed binds) and whose table
// holds each one's hosts once per bind key, named "KEY|host", their
// actions after the earlier frontends' ones. cfg itself is not changed;
// without the HTTP listener it is returned as is. The frontends are
// copied (one array a pass, in this mode only).
func HTTPListenerView(cfg model.Config, o Options) model.Config {
	if !o.HTTPListener() {
		return cfg
	}
	first := slices.IndexFunc(cfg.Frontends, o.HTTPListened)
	fixed := model.Frontend{Name: HTTPListenerFrontend, HTTP: &model.HTTP{}}
	if first < 0 {
		model.Shaped(fixed.HTTP)
		cfg.Frontends = append(slices.Clip(cfg.Frontends), fixed)
		return cfg
	}
	seen := map[string]bool{}
	out := make([]model.Frontend, 0, len(cfg.Frontends))
	for i, f := range cfg.Frontends {
		if !o.HTTPListened(f) {
			out = append(out, f)
			continue
		}
		if i == first {
			out = append(out, model.Frontend{}) // fixed, below
		}
		appendListened(&fixed, f, seen)
	}
	model.Shaped(fixed.HTTP)
	out[first] = fixed
	cfg.Frontends = out
	return cfg
}

// appendListened adds f's binds and table to the fixed frontend: each
// key once (the first frontend with a key keeps it, as desired keeps an
// address and port for one listener), f's hosts under each of its keys,
// its actions renumbered after those already there.
func appendListened(fixed *model.Frontend, f model.Frontend, seen map[string]bool) {
	h := fixed.HTTP
	base := len(h.Actions)
	h.Actions = append(h.Actions, f.HTTP.Actions...)
	for _, b := range f.Binds {
		k := ListenerKey(b.Addr, b.Port)
		if seen[k] {
			continue
		}
		seen[k] = true
		fixed.Binds = append(fixed.Binds, b)
		for _, host := range f.HTTP.Hosts {
			rules := make([]model.HTTPRule, len(host.Rules))
			for j, r := range host.Rules {
				r.Action += base
				rules[j] = r
			}
			h.Hosts = append(h.Hosts, model.HTTPHost{Name: k + listenerHostSep + host.Name, Rules: rules})
		}
	}
}

// HTTPListenerEntries are the lines of the fixed HTTP listener's map for
// cfg (before HTTPListenerView), sorted by key: each key of a listened
// frontend's binds and the frontend's name, the first frontend with a
// key keeping it.
func HTTPListenerEntries(cfg model.Config, o Options) []MapEntry {
	return listenedEntries(cfg, func(f *model.Frontend) bool { return f.HTTP != nil && o.HTTPListened(*f) }) // httpslistener.go
}

// listenerHost splits a host name of the fixed HTTP listener's table
// into its listener key with the separator ("" for any other table's
// host) and the host; ok is false when a key is there and is not one
// ListenerKey makes of an address the listener can key, so that no other
// text reaches the host map through it.
func listenerHost(name string) (key, host string, ok bool) {
	k, h, found := strings.Cut(name, listenerHostSep)
	if !found {
		return "", name, true
	}
	i := strings.LastIndexByte(k, ':')
	if i < 0 {
		return "", "", false
	}
	a, err := netip.ParseAddr(k[:i])
	port, perr := strconv.ParseUint(k[i+1:], 10, 16)
	if err != nil || perr != nil || port == 0 || !ListenerAddrOK(a) || ListenerKey(a, uint16(port)) != k {
		return "", "", false
	}
	return k + listenerHostSep, h, true
}

// writeHTTPListenerBinds writes the fixed HTTP frontend's binds and the
// rules that key a connection, refusing a key not in the map before a
// byte is read. Then writeHTTP writes the rules of every HTTP frontend,
// its host lookups under the key (httpHostKeyed).
func writeHTTPListenerBinds(w func(...string), o Options) {
	writeKeyedBinds(w, o.HTTPListenerPort(), HTTPListenerMapFile(o.ACLDir), "") // httpslistener.go
}

// writeKeyedHosts writes the host lookups of the fixed HTTP listener: as
// every HTTP frontend's (http.go), each key led by the connection's
// listener key, so a host is found only among its listener's hosts.
func writeKeyedHosts(w func(...string), hosts, oneLabel string) {
	lk := "%[var(" + httpListenerVar + ")]" + listenerHostSep
	w("\thttp-request set-var-fmt(txn.hw) \"" + lk + "%[var(txn.host)]\"")
	w("\thttp-request set-var(txn.hid) var(txn.hw),map_str(" + hosts + ")")
	w("\thttp-request set-var-fmt(txn.hw) \"" + lk + "%[var(txn.host),field(2,.,0)]\"" + hidMissing)
	w("\thttp-request set-var(txn.hid) var(txn.hw),map_str(" + oneLabel + ")" + hidMissing)
	for i := 2; i < 2+WildcardDepth; i++ {
		w("\thttp-request set-var-fmt(txn.hw) \"" + lk + "*.%[var(txn.host),field(" + strconv.Itoa(i) + ",.,0)]\"" + hidMissing)
		w("\thttp-request set-var(txn.hid) var(txn.hw),map_str(" + hosts + ")" + hidMissing)
	}
	w("\thttp-request set-var-fmt(txn.hw) \"" + lk + model.AnyHost + "\"" + hidMissing)
	w("\thttp-request set-var(txn.hid) var(txn.hw),map_str(" + hosts + ")" + hidMissing)
}
