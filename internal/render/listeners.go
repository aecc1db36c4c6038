package render

import (
	"bytes"
	"net/netip"
	"slices"
	"strconv"

	"github.com/haproxy-k8s-sync/haproxy-k8s-sync/internal/model"
)

// Listener modes (--listeners, docs/listeners.md).
//
// ListenersPorts: every frontend binds its own addresses and ports (a new
// Service, port or address is a new bind: a reload).
//
// ListenersTProxy: the frontends of Services are not in haproxy.cfg. One
// fixed frontend (ListenerFrontend) binds ListenerPort on every address
// with `transparent`, and the kernel hands it every TCP connection to an
// (address, port) the controller serves (an nftables `tproxy` rule,
// internal/driver/tproxy). The accepted socket's local address is the
// original destination, so the listener builds a key from dst and
// dst_port (ListenerKey) and takes the backend from a map file
// (ListenerMapFile); a key not in the map is refused. A new address or
// port of a backend HAProxy has is then a map entry and a set element:
// no bind, no reload. The Options.ACLDir is needed (the map lives
// there); without it every frontend keeps its own binds.
const (
	ListenersPorts  = "ports"
	ListenersTProxy = "tproxy"
)

// Listeners are the options of the listener mode.
type Listeners struct {
	Mode string // ListenersPorts ("" too) or ListenersTProxy
	Port uint16 // the fixed listener's port (tproxy); 0: DefaultListenerPort
	// HTTP puts the plain HTTP frontends behind the fixed HTTP listener
	// too (tproxy only, httplistener.go); HTTPPort is its port (0:
	// DefaultHTTPListenerPort).
	HTTP     bool
	HTTPPort uint16
	// HTTPSPort is the fixed HTTPS listener's port (with HTTP and a
	// certificate directory, httpslistener.go; 0: DefaultHTTPSListenerPort).
	HTTPSPort uint16
}

// DefaultListenerPort is the fixed listener's port when none is given.
const DefaultListenerPort = 15080

// ListenerFrontend names the fixed frontend. Model names start with a
// letter or digit, so it is no Service's.
const ListenerFrontend = "_listeners"

// listenerVar holds a connection's key (ListenerKey) in the listener.
const listenerVar = "sess.hks_listen"

// TProxy reports whether the options put Services behind the fixed
// listener.
func (o Options) TProxy() bool { return o.Listeners.Mode == ListenersTProxy && o.ACLDir != "" }

// ListenerPort is the fixed listener's port.
func (o Options) ListenerPort() uint16 {
	if o.Listeners.Port == 0 {
		return DefaultListenerPort
	}
	return o.Listeners.Port
}

// Listened reports whether f is served by the fixed listener rather than
// by a frontend of its own (ListenerKindOf, listenerroutes.go): its binds,
// and only those, reach the kernel's sets and the listener's maps.
func (o Options) Listened(f model.Frontend) bool { return o.ListenerKindOf(f) != NotListened }

// keyable reports whether every bind of f (one at least) names an address
// and port the fixed listeners can key (ListenerKey): the one test of
// what reaches the kernel's sets and HAProxy's listener maps, for the TCP
// listener (Listened) and the HTTP one (HTTPListened).
func (o Options) keyable(f model.Frontend) bool {
	if len(f.Binds) == 0 {
		return false
	}
	for _, b := range f.Binds {
		if !ListenerAddrOK(b.Addr) || b.Port == 0 || b.Port == o.ListenerPort() || (o.Listeners.HTTP && (b.Port == o.HTTPListenerPort() || b.Port == o.HTTPSListenerPort())) {
			return false
		}
	}
	return true
}

// ListenerAddrOK reports whether a can be a key of the listener map: a
// listen address (model.ListenAddrProblem), neither IPv4-mapped, zoned
// nor loopback (the host's own services there are not the controller's
// to capture), and no IPv6 address HAProxy would print as IPv4-compatible
// (::a.b.c.d, whose text glibc writes otherwise than Go): the key must be
// the very text HAProxy makes of dst.
func ListenerAddrOK(a netip.Addr) bool {
	if !a.IsValid() || a.Is4In6() || a.Zone() != "" || a.IsLoopback() || model.ListenAddrProblem(a) != "" {
		return false
	}
	if a.Is6() {
		b := a.As16()
		if [12]byte(b[:12]) == [12]byte{} {
			return false
		}
	}
	return true
}

// ListenerKey is the key of (a, port) in the listener's maps: the address
// as HAProxy prints dst (IPv6 compressed, without brackets, as its own
// logs print %fi), a colon, the port. The port has no colon, so the last
// colon splits a key whatever the family.
func ListenerKey(a netip.Addr, port uint16) string {
	return a.String() + ":" + strconv.Itoa(int(port))
}

// ListenerMapFile is the listener's map of key to backend under dir.
func ListenerMapFile(dir string) string { return dir + "/listeners.map" }

// ProxyMapFile is the listener's map of the keys whose clients send a
// PROXY protocol header (model.Frontend.AcceptProxy) under dir.
func ProxyMapFile(dir string) string { return dir + "/proxy.map" }

// MapEntry is one line of a map file: a key and its value.
type MapEntry struct{ Key, Value string }

// ListenerEntries are the lines of the listener map and of the PROXY map
// for cfg, sorted by key: one per bind of each listened frontend, whose
// value is the frontend's backend. With a pool of spare backends, cfg is
// the model HAProxy runs (spares.View), whose frontends name the spare
// their backend occupies, so the value is that spare. The
// first frontend with a key keeps it (desired already refuses a second
// Service on one address and port).
func ListenerEntries(cfg model.Config, o Options) (listen, proxy []MapEntry) {
	if !o.TProxy() {
		return nil, nil
	}
	seen := map[string]bool{}
	for _, f := range cfg.Frontends {
		if o.ListenerKindOf(f) != ListenedBackend {
			continue // a routed one's keys: ListenerRouteEntries
		}
		for _, b := range f.Binds {
			k := ListenerKey(b.Addr, b.Port)
			if seen[k] {
				continue
			}
			seen[k] = true
			listen = append(listen, MapEntry{k, f.Backend})
			if f.AcceptProxy {
				proxy = append(proxy, MapEntry{k, "1"})
			}
		}
	}
	byKey := func(a, b MapEntry) int { return cmpString(a.Key, b.Key) }
	slices.SortFunc(listen, byKey)
	slices.SortFunc(proxy, byKey)
	return listen, proxy
}

func cmpString(a, b string) int {
	switch {
	case a < b:
		return -1
	case a > b:
		return 1
	}
	return 0
}

// MapContent is a map file of entries.
func MapContent(entries []MapEntry) []byte {
	if len(entries) == 0 {
		return nil
	}
	n := 0
	for _, e := range entries {
		n += len(e.Key) + len(e.Value) + 2
	}
	var b bytes.Buffer
	b.Grow(n)
	for _, e := range entries {
		b.WriteString(e.Key)
		b.WriteByte(' ')
		b.WriteString(e.Value)
		b.WriteByte('\n')
	}
	return b.Bytes()
}

// writeListener writes the fixed frontend: the same text whatever the
// Services, so it is part of every structure of the mode and never the
// reason of a reload. The key is set first; a key not in the listener
// map is refused before a byte is read; the PROXY header, for the keys
// of the PROXY map, is read after the rules, so dst is still the one the
// client connected to when the key is made.
func writeListener(w func(...string), o Options) {
	port := strconv.Itoa(int(o.ListenerPort()))
	lmap, pmap := ListenerMapFile(o.ACLDir), ProxyMapFile(o.ACLDir)
	w("")
	w("frontend", ListenerFrontend)
	w("\tbind :" + port + " transparent")
	w("\tbind [::]:" + port + " v6only transparent")
	w("\ttcp-request connection set-var-fmt(" + listenerVar + ") \"%[dst]:%[dst_port]\"")
	w("\ttcp-request connection reject unless { var(" + listenerVar + "),map_str(" + lmap + ") -m found } || { var(" + listenerVar + "),map_str(" + ListenerRoutesMapFile(o.ACLDir) + ") -m found } || { var(" +
		listenerVar + "),map_str(" + ListenerTLSMapFile(o.ACLDir) + ") -m found }")
	w("\ttcp-request connection expect-proxy layer4 if { var(" + listenerVar + "),map_str(" + pmap + ") -m found }")
	writeListenerRoutes(w, o) // listenerroutes.go
	w("\tuse_backend %[var(" + listenerVar + "),map_str(" + lmap + ")]")
}

// listenedSources maps each backend to the restricted listened frontends
// that send to it: their source rules move into the backend (a
// `tcp-request content` rule; the listener is shared). A frontend whose
// backend is a spare of the pool has none of its own: the spare's rule
// reads the spare's files (spareranges.go).
func listenedSources(cfg model.Config, o Options) map[string][]model.Frontend {
	if !o.TProxy() {
		return nil
	}
	var out map[string][]model.Frontend
	spareSourced := o.SpareSourced(cfg)
	for _, f := range cfg.Frontends {
		if f.Restricted() && o.Listened(f) && !spareSourced(f) {
			if out == nil {
				out = map[string][]model.Frontend{}
			}
			out[f.Backend] = append(out[f.Backend], f)
		}
	}
	return out
}

// backendSourceRule is sourceRule for a backend behind the listener,
// reading the ACL files named by owner (a frontend's name, or a spare's),
// checked once the connection reached the backend, after any PROXY
// header.
func backendSourceRule(owner string, o Options) string {
	in4, in6 := SrcFileTest(ACLFile(o.ACLDir, owner, false)), SrcFileTest(ACLFile(o.ACLDir, owner, true))
	return "tcp-request content reject unless " + SourceCondition(in4, in6)
}
