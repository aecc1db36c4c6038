package runtimeapi

import (
	"github.com/haproxy-k8s-sync/haproxy-k8s-sync/internal/model"
	"github.com/haproxy-k8s-sync/haproxy-k8s-sync/internal/render"
)

// The listener's maps (render/listeners.go, tproxy mode): which backend
// serves each (address, port), and which of them read a PROXY header.
// They are map files of the ACL directory like the route maps
// (routemaps.go, the same fileSet): written first, then the running
// worker's copy replaced in one atomic step, so a new address or port of
// a backend HAProxy has is no reload. The kernel's set of the same keys
// (internal/driver/tproxy) is changed around this driver's pass
// (tproxy.Ordered) so that no element ever lacks its entry.

// listenerMapFiles are the listener's two map files for cfg (none in
// ports mode), the PROXY map first: its entries are what a listener
// map's key points to (mapdiff.go's order), so a new key expects its
// PROXY header from its first connection on, and a key gone is refused
// before it stops expecting one.
func (d *HAProxy) listenerMapFiles(cfg model.Config) []patternFile {
	o := d.opts.Render
	if !o.TProxy() {
		return nil
	}
	listen, proxy := render.ListenerEntries(cfg, o)
	return []patternFile{
		mapFile(render.ProxyMapFile(o.ACLDir), proxy, "listener PROXY map"),
		mapFile(render.ListenerMapFile(o.ACLDir), listen, "listener map"),
	}
}

func mapFile(path string, entries []render.MapEntry, what string) patternFile {
	pf := patternFile{path: path, body: render.MapContent(entries), what: what}
	for _, e := range entries {
		pf.lines = append(pf.lines, e.Key+" "+e.Value)
	}
	return pf
}

// Serving returns the model the running worker serves as this driver
// last applied it (in HAProxy's names: with a pool, its spares), and
// whether that is known: after a pass whose reload was held back
// (driver.ErrDeferred), the part of the pass applied without it, whose
// listener map entries the worker holds (tproxy.Ordered adds their set
// elements). Unknown after a failure or a reload refused as busy, until
// the state is read back; read back, it is empty until a pass applies.
func (d *HAProxy) Serving() (model.Config, bool) {
	d.mu.Lock()
	defer d.mu.Unlock()
	return d.running, d.known
}
