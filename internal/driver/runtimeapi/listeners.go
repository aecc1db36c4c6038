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

// listenerMapFiles are the listener's map files for cfg (none in ports
// mode), the PROXY map first: its entries are what a listener
// map's key points to (mapdiff.go's order), so a new key expects its
// PROXY header from its first connection on, and a key gone is refused
// before it stops expecting one. fronts: which of cfg's frontends changed
// against the last pass's (nil: unknown): the memo looks at those alone.
func (d *HAProxy) listenerMapFiles(cfg model.Config, fronts *model.FrontendChanges) []patternFile {
	o := d.opts.Render
	if !o.TProxy() {
		return nil
	}
	m := &d.listenerMemo
	listen, proxy, le, pe, known := m.memo.Entries(cfg, fronts, o)
	lf := mapFile(render.ListenerMapFile(o.ACLDir), listen, "listener map")
	pf := mapFile(render.ProxyMapFile(o.ACLDir), proxy, "listener PROXY map")
	if known && !d.noMapEdits {
		// The memo's edits start from the files of its last call: a
		// worker holding those needs only them (mapsync.go).
		lf.edit = &fileEdit{from: m.listen, edit: httpEdit(le)}
		pf.edit = &fileEdit{from: m.proxy, edit: httpEdit(pe)}
	}
	m.listen, m.proxy = lf.body, pf.body
	// The routed frontends' two maps (render/listenerroutes.go: the
	// gateway mode's TCP listeners, a few), whole each pass: the
	// backends map before the routes map, whose ids point into it.
	routes, backends := render.ListenerRouteEntries(cfg, o)
	rf := mapFile(render.ListenerRoutesMapFile(o.ACLDir), routes, "listener routes map")
	bf := mapFile(render.ListenerBackendsMapFile(o.ACLDir), backends, "listener backends map")
	// The TLS passthrough listeners' (render/listenertls.go): the names
	// after the backends their ids point into, the keys that wait for a
	// ClientHello last, once their names are there.
	keys, names := render.ListenerTLSEntries(cfg, o)
	sf := mapFile(render.ListenerSNIMapFile(o.ACLDir), names, "listener server-name map")
	tf := mapFile(render.ListenerTLSMapFile(o.ACLDir), keys, "listener TLS keys map")
	if !o.HTTPListener() {
		return []patternFile{pf, bf, sf, tf, rf, lf}
	}
	// The fixed HTTP listener's keys (render/httplistener.go), after its
	// table's maps (routeMapFilesEarly): a key is taken once its hosts are
	// there.
	hf := mapFile(render.HTTPListenerMapFile(o.ACLDir), render.HTTPListenerEntries(cfg, o), "HTTP listener map")
	if !o.HTTPSListener() {
		return []patternFile{pf, bf, sf, tf, rf, lf, hf}
	}
	// The fixed HTTPS listener's (render/httpslistener.go), the same way.
	sf2 := mapFile(render.HTTPSListenerMapFile(o.ACLDir), render.HTTPSListenerEntries(cfg, o), "HTTPS listener map")
	return []patternFile{pf, bf, sf, tf, rf, lf, hf, sf2}
}

// listenerMemo is the listener maps' memo (render.ListenerMemo) and the
// files it made last, from which its edits start.
type listenerMemo struct {
	memo          render.ListenerMemo
	listen, proxy []byte
}

// httpEdit is e as the edit of a file the driver sends (fileEdit).
func httpEdit(e render.ListenerEdit) render.HTTPMapEdit {
	var out render.HTTPMapEdit
	for _, a := range e.Add {
		out.Add = append(out.Add, render.HTTPMapEntry(a))
	}
	for _, s := range e.Set {
		out.Set = append(out.Set, render.HTTPMapEntry(s))
	}
	out.Del = e.Del
	return out
}

// mapFile is the map file at path of entries, its lines made only when
// asked (patternFile.allLines): a pass that sends an edit needs none.
func mapFile(path string, entries []render.MapEntry, what string) patternFile {
	// The memo's own entries, not a copy of 10,000 a pass (issue 29):
	// read only within this pass (the memo changes them in the next).
	return patternFile{path: path, body: render.MapContent(entries), listened: entries, keyMap: true, what: what}
}
