package render

import (
	"slices"
	"strconv"

	"github.com/haproxy-k8s-sync/haproxy-k8s-sync/internal/model"
)

// The gateway mode's TCP listeners behind the fixed listener (issue 29).
// A routed frontend that reads no TLS (a TCP listener: its routes take
// every connection, by weight) has no rule of its own in tproxy mode:
// its binds are keys of the listener, as a Service's are, and the
// listener finds its routes by two maps instead of one backend:
//
//   - ListenerRoutesMapFile: each key to the frontend's route id
//     (ListenerRouteIDs: a number from the frontend's name);
//   - ListenerBackendsMapFile: id * pickRange + the connection's random
//     number to a backend, by ranges (map_int "lo:hi") that cut the
//     frontend's route's share by its weights, as the route maps of
//     routemaps.go do per route.
//
// A new Gateway, a new TCP listener or a new port of one is then map
// entries and set elements, no bind and no reload; its backends come
// from the pool (--backend-pool) as a route's always did.
//
// What the listener does with a key is its kind (ListenerKind, one per
// frontend): the one predicate, Options.ListenerKindOf, decides which
// frontends' binds reach the kernel's sets (Options.Listened) and which
// map holds their keys.

// ListenerKind is how the fixed listener serves a frontend's keys.
type ListenerKind uint8

const (
	// NotListened: the frontend keeps its own frontend and binds.
	NotListened ListenerKind = iota
	// ListenedBackend: every connection to one backend (a Service):
	// its keys in ListenerMapFile.
	ListenedBackend
	// ListenedTCPRoutes: a gateway TCP listener, its routes drawn by
	// weight: its keys in ListenerRoutesMapFile.
	ListenedTCPRoutes
	// ListenedTLSRoutes: a gateway TLS passthrough listener, its routes
	// chosen by the ClientHello's server name: its keys in
	// ListenerTLSMapFile, the names under them in ListenerSNIMapFile
	// (listenertls.go).
	ListenedTLSRoutes
)

// ListenerKindOf is how the fixed listener serves f, NotListened when it
// does not (ports mode, or a frontend it cannot take): one backend and no
// TLS termination (ListenedBackend), or routes that read no TLS and no
// PROXY header and a frontend with no per-frontend setting the shared
// listener cannot keep (ListenedTCPRoutes); and in both, binds that all
// name an address the listener can key (keyable: ListenerAddrOK, none on
// the listeners' own ports). Routes by the ClientHello's server name (TLS
// passthrough) are ListenedTLSRoutes when the frontend waits the
// listener's one inspect delay (model.DefaultInspectDelay). One
// terminating TLS, an HTTP one, or one on every address (no Addr) keeps
// its own.
func (o Options) ListenerKindOf(f model.Frontend) ListenerKind {
	if !o.TProxy() || f.TLS != nil || f.HTTP != nil || len(f.Binds) == 0 {
		return NotListened
	}
	kind := ListenedBackend
	if f.Routed() {
		if f.Restricted() || f.AcceptProxy || f.MaxConn != 0 || f.TimeoutClient != 0 {
			return NotListened
		}
		kind = ListenedTCPRoutes
		if f.BySNI() {
			if !listenerDelay(f) {
				return NotListened
			}
			kind = ListenedTLSRoutes
		}
	} else if f.Backend == "" {
		return NotListened
	}
	if !o.keyable(f) {
		return NotListened
	}
	return kind
}

// ListenerRoutesMapFile is the listener's map of key to route id under
// dir.
func ListenerRoutesMapFile(dir string) string { return dir + "/listeners.routes.map" }

// ListenerBackendsMapFile is the listener's map of route id and random
// number ranges to backend under dir.
func ListenerBackendsMapFile(dir string) string { return dir + "/listeners.backends.map" }

// listenerRouteVar holds a connection's route id in the listener.
const listenerRouteVar = "sess.hks_route"

// ListenerRouteIDs gives each frontend of cfg the listener serves by its
// routes (ListenedTCPRoutes) its id, by name: a hash of the name, so a
// frontend keeps its id whatever others come and go, probing to the next
// free id on the rare collision (frontends in cfg's order).
func ListenerRouteIDs(cfg model.Config, o Options) map[string]int64 {
	var out map[string]int64
	var used map[int64]bool
	for _, f := range cfg.Frontends {
		if !f.Routed() || o.ListenerKindOf(f) != ListenedTCPRoutes {
			continue
		}
		if out == nil {
			out, used = map[string]int64{}, map[int64]bool{}
		}
		if _, ok := out[f.Name]; !ok {
			out[f.Name] = freeID(used, f.Name)
		}
	}
	return out
}

// ListenerRouteEntries are the lines of the listener's routes map (key
// to id) and backends map (id's ranges to backend) for cfg, each sorted
// by key. A frontend's route is its first (a TCP listener's routes all
// take every connection: the first wins, as its rules did); the first
// frontend with a key keeps it. The backends map holds the TLS
// passthrough listeners' routes too (ListenerTLSEntries: their ids).
func ListenerRouteEntries(cfg model.Config, o Options) (routes, backends []MapEntry) {
	ids := ListenerRouteIDs(cfg, o)
	tls := listenerTLSRoutes(cfg, o, ids)
	if len(ids) == 0 && len(tls) == 0 {
		return nil, nil
	}
	for _, r := range tls {
		base := r.id * pickRange
		weightRanges(r.backends, pickRange, func(lo, hi int64, name string) {
			backends = append(backends, MapEntry{strconv.FormatInt(base+lo, 10) + ":" + strconv.FormatInt(base+hi, 10), name})
		})
	}
	seen, done := map[string]bool{}, map[string]bool{}
	for _, f := range cfg.Frontends {
		id, ok := ids[f.Name]
		if !ok || done[f.Name] {
			continue
		}
		done[f.Name] = true
		v := strconv.FormatInt(id, 10)
		for _, b := range f.Binds {
			k := ListenerKey(b.Addr, b.Port)
			if !seen[k] {
				seen[k] = true
				routes = append(routes, MapEntry{k, v})
			}
		}
		base := id * pickRange
		weightRanges(f.Routes[0].Backends, pickRange, func(lo, hi int64, name string) {
			backends = append(backends, MapEntry{strconv.FormatInt(base+lo, 10) + ":" + strconv.FormatInt(base+hi, 10), name})
		})
	}
	byKey := func(a, b MapEntry) int { return cmpString(a.Key, b.Key) }
	slices.SortFunc(routes, byKey)
	slices.SortFunc(backends, byKey)
	return routes, backends
}

// writeListenerRoutes writes the listener's rules for the keys of routed
// frontends (after the key is set): the route id, the draw, the TLS
// passthrough keys' route id by server name (writeListenerTLS), and the
// backend of the id's range the draw falls in. A key with an id is not
// refused; one without reads no random number.
func writeListenerRoutes(w func(...string), o Options) {
	rmap, bmap := ListenerRoutesMapFile(o.ACLDir), ListenerBackendsMapFile(o.ACLDir)
	found := " if { var(" + listenerRouteVar + ") -m found }"
	w("\ttcp-request connection set-var(" + listenerRouteVar + ") var(" + listenerVar + "),map_str(" + rmap + ")")
	w("\ttcp-request connection set-var(sess.pick) rand(" + strconv.Itoa(pickRange) + ")" + found)
	writeListenerTLS(w, o) // listenertls.go: the keys that wait for a ClientHello
	w("\tuse_backend %[var(" + listenerRouteVar + "),mul(" + strconv.Itoa(pickRange) + "),add(sess.pick),map_int(" + bmap + ")]" + found)
}

// ListenerTraits are what ListenerKindOf reads of a frontend beside its
// name, binds and backend: a memo that kept a frontend's kind (the
// listener's maps, the kernel's sets) asks again only when these, the
// binds or the backend differ.
type ListenerTraits uint16

// TraitsOf are f's ListenerTraits.
func TraitsOf(f *model.Frontend) ListenerTraits {
	var t ListenerTraits
	for i, on := range []bool{f.Routed(), f.BySNI(), f.TLS != nil, f.HTTP != nil, f.Restricted(), f.AcceptProxy,
		f.MaxConn != 0, f.TimeoutClient != 0, listenerDelay(*f)} {
		if on {
			t |= 1 << i
		}
	}
	return t
}
