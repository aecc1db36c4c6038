package render

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"slices"
	"strings"

	"github.com/haproxy-k8s-sync/haproxy-k8s-sync/internal/model"
)

// Backends created at runtime (Options.DynamicBackends, HAProxy 3.4+):
// `add backend NAME from DEFAULTS` takes every setting of the new backend
// from a named defaults section of the running configuration, so each
// class of backends (what a backend section says besides its name and
// servers) gets one, `defaults _dyn_<digest of the settings>`, and a
// backend of that class is written as `backend NAME from _dyn_...` with
// its servers only. Such a backend is no structure: the structure hash
// covers the defaults sections (a new class is a reload: HAProxy must have
// loaded the defaults before a backend can be created from it) and not
// the backends written from them, so a new Service of a class in use, or
// one that goes, changes no hash and the driver creates or removes its
// backend through the Runtime API (runtimeapi/dynamic.go); the next
// reload loads it from the file as an ordinary backend.
//
// They come after every other section: a proxy without `from` takes the
// last defaults section before it, which must stay the unnamed one.
//
// What a named defaults cannot hold keeps a backend static: a stick table
// (ClientIP affinity: 3.4 refuses `stick-table` and `stick on` in a
// defaults section), a rule reading ACL files named by one frontend or
// spare (source ranges behind the fixed listener), and servers that track
// their node (each slot's `track` differs). The controller's own
// backends (`_nodes`, `_reject`, spares) stay static too, and so do
// backends speaking TLS (backendtls.go: their CA file is under the
// certificate directory, which a class's body does not know).

// DynamicPrefix starts the name of a class's defaults section.
const DynamicPrefix = "_dyn_"

// dynamic is which backends of a config are written from a class's
// defaults: backend name -> defaults name, and each defaults section's
// settings (its body after writeDefaults), by name.
type dynamic struct {
	from    map[string]string
	classes map[string]string
}

// DynamicBackends maps every backend of cfg written from a class's named
// defaults with opts to that section's name (empty without
// Options.DynamicBackends). The driver creates the backends it lists with
// `add backend NAME from DEFAULTS`.
func DynamicBackends(cfg model.Config, opts Options) map[string]string {
	if !opts.DynamicBackends {
		// Not a walk of every frontend (listenedSources) for none: the
		// driver asks twice a pass, a new Service's at 10,000 too.
		return nil
	}
	return dynamicBackends(cfg, opts, listenedSources(cfg, opts)).from
}

func dynamicBackends(cfg model.Config, opts Options, listenedSrc map[string][]model.Frontend) dynamic {
	var d dynamic
	if !opts.DynamicBackends {
		return d
	}
	for _, be := range cfg.Backends {
		if !dynamicOK(be, opts, listenedSrc) {
			continue
		}
		body := classBody(be, opts.ConnectPerRequest)
		sum := sha256.Sum256([]byte(body))
		name := DynamicPrefix + hex.EncodeToString(sum[:4])
		if d.from == nil {
			d.from, d.classes = map[string]string{}, map[string]string{}
		}
		d.from[be.Name], d.classes[name] = name, body
	}
	return d
}

// dynamicOK reports whether be can be written from a class's defaults.
func dynamicOK(be *model.Backend, opts Options, listenedSrc map[string][]model.Frontend) bool {
	return be.Name != "" && be.Name[0] != '_' && be.Affinity == 0 && !be.TrackNodes && be.TLS == nil && be.Cookie == nil &&
		len(listenedSrc[be.Name]) == 0 && !opts.SpareRanged(be)
}

// classBody is the settings lines build writes for be's section (its
// skeleton without name and servers): the body of its class's defaults
// (connect: Options.ConnectPerRequest).
func classBody(be *model.Backend, connect bool) string {
	c := be.Structure()
	c.Name, c.Service, c.Servers = "x", "", nil
	var b bytes.Buffer
	build(&b, model.Config{Backends: []*model.Backend{&c}}, nil, Options{ConnectPerRequest: connect}, "", true)
	s := b.String()
	const head = "\nbackend x\n"
	return s[strings.Index(s, head)+len(head):]
}

// ServerOptions are the keywords `add server` takes for a server of be
// written from its class's defaults: a server added at runtime inherits
// no default-server line, so it names them itself.
func ServerOptions(be *model.Backend) []string {
	opts := strings.Fields(defaultServer(be))
	if be.HTTP && be.H2C {
		opts = append(opts, strings.Fields(strings.TrimPrefix(httpH2CServers, "\tdefault-server"))...)
	}
	return opts
}

// writeDynamic writes the classes' defaults sections and, unless
// skeleton, the backends written from them.
func writeDynamic(w func(...string), cfg model.Config, layout model.Layout, d dynamic, opts Options, skeleton bool) {
	names := make([]string, 0, len(d.classes))
	for n := range d.classes {
		names = append(names, n)
	}
	slices.Sort(names)
	for _, n := range names {
		w("")
		w("defaults", n)
		writeDefaults(w, opts)
		w(strings.TrimSuffix(d.classes[n], "\n"))
	}
	if skeleton {
		return
	}
	for _, be := range cfg.Backends {
		from, ok := d.from[be.Name]
		if !ok {
			continue
		}
		w("")
		w("backend", be.Name, "from", from)
		for i, s := range layout[be.Name] {
			writeSlot(w, model.SlotName(i), s, "", false)
		}
	}
}
