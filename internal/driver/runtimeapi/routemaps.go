package runtimeapi

import (
	"context"
	"fmt"
	"path/filepath"
	"slices"

	"github.com/haproxy-k8s-sync/haproxy-k8s-sync/internal/driver"
	"github.com/haproxy-k8s-sync/haproxy-k8s-sync/internal/model"
	"github.com/haproxy-k8s-sync/haproxy-k8s-sync/internal/render"
)

// Route maps (render/routemaps.go; Gateway API routes, with the ACL
// directory): which backends a route sends to and their weights live in a
// map file per route, not in the structure. As with source ranges
// (acl.go), the file is written first, so a HAProxy that (re)starts reads
// what is in force, and a running worker is told through the Runtime API
// in one atomic step per file (`prepare map`, `add map @V`, `commit map
// @V`): a weight change, or a route moved to another backend the config
// has, needs no reload, and no connection sees half of the old and half
// of the new map.

type routeMap struct {
	file  string
	route model.Route
}

// routeMapsOf lists the map of every route of cfg's routed frontends
// that keep their own frontend (o.ACLDir the directory).
func routeMapsOf(o render.Options, cfg model.Config) []routeMap {
	var out []routeMap
	dir := o.ACLDir
	for _, f := range cfg.Frontends {
		if !f.Routed() || render.RoutesAsMaps(f, dir) {
			continue // its two maps instead (tlsRouteMapFiles)
		}
		if o.Listened(f) {
			continue // behind the fixed listener: its maps (listeners.go)
		}
		for i, r := range f.Routes {
			if r.SNI != "" && !model.ValidSNI(r.SNI) {
				continue // no rule reads it (render)
			}
			out = append(out, routeMap{render.RouteMapFile(dir, f.Name, i), r})
		}
	}
	return out
}

// routeMapFiles are the map files of cfg's routes, the HTTP frontends'
// too (httpmaps.go).
func (d *HAProxy) routeMapFiles(cfg model.Config) []patternFile {
	_, build := d.routeMapFilesEarly(cfg, nil)
	return build()
}

// routeMapFilesEarly gives the HTTP maps' memos cfg's tables and returns
// build, which makes every file of routeMapFiles (call it once, after),
// and, when the HTTP maps can go to the worker by their memos' edits
// before they are made (httpMapUpdate), the files in build's order with
// those pending; nil otherwise. fronts: which of cfg's frontends changed
// against the last pass's (nil: unknown), for the listener's maps.
func (d *HAProxy) routeMapFilesEarly(cfg model.Config, fronts *model.FrontendChanges) (early []patternFile, build func() []patternFile) {
	dir := d.opts.Render.ACLDir
	if dir == "" {
		return nil, func() []patternFile { return nil }
	}
	var out []patternFile
	for _, m := range routeMapsOf(d.opts.Render, cfg) {
		pf := patternFile{path: m.file, body: render.RouteMapContent(m.route), what: "route map " + filepath.Base(m.file)}
		for _, e := range render.RouteMapEntries(m.route) {
			pf.lines = append(pf.lines, e.Key+" "+e.Backend)
		}
		out = append(out, pf)
	}
	out = append(out, tlsRouteMapFiles(dir, cfg)...)                             // tlsroutemaps.go
	out = append(out, clientAuthMapFiles(d.opts.Render, cfg, d.mapsHeldBack)...) // clientauth.go
	// The fixed HTTP listener's one table (tproxy): the memo's, the last
	// pass's table itself when no listened frontend changed.
	// Made of the HTTP frontends alone, the only ones the HTTP maps read:
	// a view of every frontend was a copy of 10,000 Services' a pass
	// (~3 MB; BENCHMARKS.md, issue 29).
	httpOnly := cfg
	httpOnly.Frontends = httpFrontends(cfg.Frontends)
	memos, httpCfg := &d.httpMemos, model.Config{}
	if d.noHTTPMemo {
		memos, httpCfg = nil, render.HTTPListenerView(httpOnly, d.opts.Render)
	} else {
		httpCfg = d.httpListenerView.View(httpOnly, d.opts.Render)
	}
	if fixed, in, ok := render.HTTPSListenerFront(httpCfg, d.opts.Render); ok {
		// The fixed HTTPS listener's table (render/httpslistener.go), in
		// place of its frontends': only the HTTP frontends matter here.
		var fronts []model.Frontend
		for _, f := range httpCfg.Frontends {
			if f.HTTP != nil && !in[f.Name] {
				fronts = append(fronts, f)
			}
		}
		httpCfg.Frontends = append(fronts, fixed)
	}

	httpEarly, httpBuild := httpMapUpdate(dir, httpCfg, memos, !d.noMapEdits) // httpmaps.go
	listeners := d.listenerMapFiles(cfg, fronts)                              // the same kind of file (listeners.go)
	build = func() []patternFile {
		return slices.Concat(out, httpBuild(), listeners)
	}
	if httpEarly == nil && slices.ContainsFunc(httpCfg.Frontends, func(f model.Frontend) bool { return f.HTTP != nil }) {
		return nil, build
	}
	return slices.Concat(out, httpEarly, listeners), build
}

// pushRouteMaps brings the route maps of the running worker to those of
// cfg, whose structure is the one running (same hash: the same routes
// read the same files). fronts: which of cfg's frontends changed against
// the last pass's (nil: unknown).
func (d *HAProxy) pushRouteMaps(ctx context.Context, cfg model.Config, fronts *model.FrontendChanges, res *driver.Result) error {
	d.mapsHeldBack = d.heldBack // clientauth.go: pushClientAuth, after the certificates
	files, build := d.routeMapFilesEarly(cfg, fronts)
	d.mapsHeldBack = nil
	edits, err := d.pushMaps(ctx, &d.routeMaps, files, build, res) // mapsync.go
	if err != nil {
		return fmt.Errorf("runtime API, route maps: %w", err)
	}
	if len(edits) > 0 {
		logMapEdits(d.log, edits)
	}
	return nil
}

// httpFrontends are the frontends of fs with an HTTP table, in order
// (copies; none of a Service's).
func httpFrontends(fs []model.Frontend) []model.Frontend {
	var out []model.Frontend
	for i := range fs {
		if fs[i].HTTP != nil {
			out = append(out, fs[i])
		}
	}
	return out
}
