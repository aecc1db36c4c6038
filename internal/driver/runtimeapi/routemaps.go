package runtimeapi

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/haproxy-k8s-sync/haproxy-k8s-sync/internal/atomicfile"
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

// routeMapsOf lists the map of every route of cfg's routed frontends.
func routeMapsOf(dir string, cfg model.Config) []routeMap {
	var out []routeMap
	for _, f := range cfg.Frontends {
		for i, r := range f.Routes {
			if r.SNI != "" && !model.ValidSNI(r.SNI) {
				continue // no rule reads it (render)
			}
			out = append(out, routeMap{render.RouteMapFile(dir, f.Name, i), r})
		}
	}
	return out
}

// writeRouteMaps writes every route map of cfg whose content is not the
// one last written, and returns those it wrote.
func (d *HAProxy) writeRouteMaps(cfg model.Config) ([]routeMap, error) {
	dir := d.opts.Render.ACLDir
	if dir == "" {
		return nil, nil
	}
	var wrote []routeMap
	for _, m := range routeMapsOf(dir, cfg) {
		body := string(render.RouteMapContent(m.route))
		if old, ok := d.routeMaps[m.file]; ok && old == body {
			continue
		}
		if err := os.MkdirAll(dir, 0o755); err != nil {
			return wrote, err
		}
		if err := atomicfile.Write(m.file, []byte(body), 0o644); err != nil {
			return wrote, fmt.Errorf("route map %s: %w", filepath.Base(m.file), err)
		}
		if d.routeMaps == nil {
			d.routeMaps = make(map[string]string)
		}
		d.routeMaps[m.file] = body
		wrote = append(wrote, m)
	}
	return wrote, nil
}

// pushRouteMaps brings the route maps of the running worker to those of
// cfg, whose structure is the one running (same hash: the same routes
// read the same files).
func (d *HAProxy) pushRouteMaps(ctx context.Context, cfg model.Config, res *driver.Result) error {
	changed, err := d.writeRouteMaps(cfg)
	if err != nil || len(changed) == 0 {
		return err
	}
	t := time.Now()
	defer func() { res.Runtime += time.Since(t) }()
	files := make([]string, len(changed))
	lines := make([][]string, len(changed))
	for i, m := range changed {
		files[i] = m.file
		for _, e := range render.RouteMapEntries(m.route) {
			lines[i] = append(lines[i], e.Key+" "+e.Backend)
		}
	}
	ops, err := d.replaceFiles(ctx, "map", files, lines)
	if err != nil {
		d.routeMaps = nil // unknown: write and push again next time
		d.known = false
		return fmt.Errorf("runtime API, route maps: %w", err)
	}
	res.Ops += ops
	d.log.Info("routes changed without reload", "maps", len(changed), "first", filepath.Base(changed[0].file))
	return nil
}

// pruneRouteMaps removes the map files no route of cfg reads, once a
// reload put cfg in force.
func (d *HAProxy) pruneRouteMaps(cfg model.Config) {
	dir := d.opts.Render.ACLDir
	if dir == "" {
		return
	}
	keep := make(map[string]bool)
	for _, m := range routeMapsOf(dir, cfg) {
		keep[filepath.Base(m.file)] = true
	}
	entries, err := os.ReadDir(dir)
	if err != nil {
		return
	}
	for _, e := range entries {
		if n := e.Name(); strings.HasSuffix(n, ".map") && !keep[n] {
			_ = os.Remove(filepath.Join(dir, n))
			delete(d.routeMaps, filepath.Join(dir, n))
		}
	}
}
