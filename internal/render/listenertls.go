package render

import (
	"slices"
	"strconv"
	"strings"

	"github.com/haproxy-k8s-sync/haproxy-k8s-sync/internal/model"
	"github.com/haproxy-k8s-sync/haproxy-k8s-sync/internal/settings"
)

// The gateway mode's TLS passthrough listeners behind the fixed listener
// (issue 29, ListenedTLSRoutes). Their keys are in a map of their own,
// ListenerTLSMapFile, so the listener tells them apart before it reads a
// byte: every connection whose key is not there is accepted at once (a
// Service's, a TCP listener's: they never wait), and only these wait the
// listener's inspect delay (model.DefaultInspectDelay, a frontend's own
// semantics) for the ClientHello. Its server name, lower case, is then
// looked up under the key in ListenerSNIMapFile ("KEY/name"; then
// "KEY/*." + the name less its first label, less two, ... WildcardDepth
// times, the longest wildcard first, as tlsroutemaps.go walks them; then
// "KEY/" + model.AnyHost for a route that takes any name) to a route id,
// drawn in the backends map (ListenerBackendsMapFile) as a TCP
// listener's route is. A new Gateway with a TLS passthrough listener,
// or a new route of one, is then map entries and set elements: no
// reload. Only names that pass model.ValidSNI reach the map's keys.

// ListenerTLSMapFile is the listener's map of the keys that wait for a
// ClientHello under dir.
func ListenerTLSMapFile(dir string) string { return dir + "/listeners.tls.map" }

// ListenerSNIMapFile is the listener's map of key and server name to
// route id under dir.
func ListenerSNIMapFile(dir string) string { return dir + "/listeners.sni.map" }

// listenerDelay reports whether f waits what the listener waits for a
// ClientHello (its InspectDelay unset or the default): only then can the
// listener serve its routes by server name.
func listenerDelay(f model.Frontend) bool {
	return f.InspectDelay == 0 || f.InspectDelay == model.DefaultInspectDelay
}

// listenerTLSRoute is one route of a listened TLS passthrough frontend:
// its frontend, server name (lower case; model.AnyHost for any), id and
// backends.
type listenerTLSRoute struct {
	front, name string
	id          int64
	backends    []model.WeightedBackend
}

// listenerTLSRoutes are the routes of cfg's ListenedTLSRoutes frontends
// with a valid server name, in cfg's and each frontend's order (the
// producer's precedence), each with its id: a hash of the frontend's
// name and the server name, probing past the ids of tcp (the TCP
// listeners', ListenerRouteIDs) and of the routes before it. A name
// twice in a frontend keeps its first route.
func listenerTLSRoutes(cfg model.Config, o Options, tcp map[string]int64) []listenerTLSRoute {
	var out []listenerTLSRoute
	var used map[int64]bool
	for _, f := range cfg.Frontends {
		if !f.Routed() || o.ListenerKindOf(f) != ListenedTLSRoutes {
			continue
		}
		if used == nil {
			used = make(map[int64]bool, len(tcp))
			for _, id := range tcp {
				used[id] = true
			}
		}
		seen := map[string]bool{}
		for _, r := range f.Routes {
			name := strings.ToLower(r.SNI)
			if name != "" && !model.ValidSNI(name) {
				continue // never a key a user wrote unchecked
			}
			if name == "" {
				name = model.AnyHost
			}
			if seen[name] {
				continue
			}
			seen[name] = true
			out = append(out, listenerTLSRoute{front: f.Name, name: name, id: freeID(used, f.Name+"/"+name), backends: r.Backends})
		}
	}
	return out
}

// ListenerTLSEntries are the lines of the listener's map of the keys that
// wait for a ClientHello (key to the frontend's name) and of its
// server-name map ("KEY/name" to route id) for cfg, each sorted by key;
// the route ids' backends are in ListenerRouteEntries' backends map. The
// first frontend with a key keeps it.
func ListenerTLSEntries(cfg model.Config, o Options) (keys, names []MapEntry) {
	routes := listenerTLSRoutes(cfg, o, ListenerRouteIDs(cfg, o))
	if len(routes) == 0 {
		return nil, nil
	}
	owner := map[string]string{}
	for i := 0; i < len(cfg.Frontends); i++ {
		f := &cfg.Frontends[i]
		if o.ListenerKindOf(*f) != ListenedTLSRoutes {
			continue
		}
		for _, b := range f.Binds {
			k := ListenerKey(b.Addr, b.Port)
			if _, ok := owner[k]; !ok {
				owner[k] = f.Name
				keys = append(keys, MapEntry{k, f.Name})
			}
		}
	}
	for i := 0; i < len(cfg.Frontends); i++ {
		f := &cfg.Frontends[i]
		for _, b := range f.Binds {
			k := ListenerKey(b.Addr, b.Port)
			if owner[k] != f.Name {
				continue
			}
			for _, r := range routes {
				if r.front == f.Name {
					names = append(names, MapEntry{k + "/" + r.name, strconv.FormatInt(r.id, 10)})
				}
			}
		}
	}
	byKey := func(a, b MapEntry) int { return cmpString(a.Key, b.Key) }
	slices.SortFunc(keys, byKey)
	slices.SortFunc(names, byKey)
	names = slices.CompactFunc(names, func(a, b MapEntry) bool { return a.Key == b.Key })
	return keys, names
}

// listenerTLS variables: the ClientHello's server name and the name
// looked up under the key.
const (
	listenerSNIVar    = "sess.hks_sni"
	listenerSNIKeyVar = "sess.hks_snik"
)

// writeListenerTLS writes the listener's rules for the keys that wait
// for a ClientHello: the inspect delay; every other key accepted at
// once; the server name once a ClientHello came (the condition waits for
// it, the delay at most); the route id of the name under the key, of its
// wildcards, of any name; the draw. The backend is then the routes'
// (writeListenerRoutes' use_backend).
func writeListenerTLS(w func(...string), o Options) {
	tmap, smap := ListenerTLSMapFile(o.ACLDir), ListenerSNIMapFile(o.ACLDir)
	missing := " if !{ var(" + listenerRouteVar + ") -m found }"
	lookup := func(name string) {
		w("\ttcp-request content set-var-fmt(" + listenerSNIKeyVar + ") \"%[var(" + listenerVar + ")]/" + name + "\"" + missing)
		w("\ttcp-request content set-var(" + listenerRouteVar + ") var(" + listenerSNIKeyVar + "),map_str(" + smap + ")" + missing)
	}
	w("\ttcp-request inspect-delay", settings.FormatDuration(model.DefaultInspectDelay))
	w("\ttcp-request content accept unless { var(" + listenerVar + "),map_str(" + tmap + ") -m found }")
	w("\ttcp-request content set-var(" + listenerSNIVar + ") req.ssl_sni,lower if { req.ssl_hello_type 1 }")
	lookup("%[var(" + listenerSNIVar + ")]")
	for i := 2; i < 2+WildcardDepth; i++ {
		lookup("*.%[var(" + listenerSNIVar + "),field(" + strconv.Itoa(i) + ",.,0)]")
	}
	lookup(model.AnyHost)
	w("\ttcp-request content set-var(sess.pick) rand(" + strconv.Itoa(pickRange) + ") if { var(" + listenerRouteVar + ") -m found }")
}

// ListenerMaps are the contents of every map file the fixed TCP listener
// reads for cfg, by path under dir (the six files; tests and tools that
// write them for an HAProxy check; the driver writes them in its order).
func ListenerMaps(cfg model.Config, o Options, dir string) map[string][]byte {
	listen, proxy := ListenerEntries(cfg, o)
	routes, backends := ListenerRouteEntries(cfg, o)
	keys, names := ListenerTLSEntries(cfg, o)
	return map[string][]byte{ListenerMapFile(dir): MapContent(listen), ProxyMapFile(dir): MapContent(proxy),
		ListenerRoutesMapFile(dir): MapContent(routes), ListenerBackendsMapFile(dir): MapContent(backends),
		ListenerTLSMapFile(dir): MapContent(keys), ListenerSNIMapFile(dir): MapContent(names)}
}
