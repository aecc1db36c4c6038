package runtimeapi

import (
	"path/filepath"

	"github.com/haproxy-k8s-sync/haproxy-k8s-sync/internal/model"
	"github.com/haproxy-k8s-sync/haproxy-k8s-sync/internal/render"
)

// ACLDir is the directory of the pattern files (source ranges, route
// maps) beside a haproxy.cfg at configPath, as the driver uses it: "acl"
// next to the config, or "" (the ranges inline) when its absolute name is
// not one HAProxy reads whole (model.ValidFilePath).
func ACLDir(configPath string) string { return dirBeside(configPath, "acl") }

// dirBeside is the directory name beside a haproxy.cfg at configPath, or
// "" when its absolute name is not one HAProxy reads whole
// (model.ValidFilePath).
func dirBeside(configPath, name string) string {
	abs, err := filepath.Abs(configPath)
	if err != nil {
		return ""
	}
	if dir := filepath.Join(filepath.Dir(abs), name); model.ValidFilePath(dir) {
		return dir
	}
	return ""
}

// PatternFiles are the files that cfg, rendered with opts, reads besides
// haproxy.cfg (none without opts.ACLDir), by path, with what the driver
// writes into each: what `render -o DIR` writes beside the config.
func PatternFiles(cfg model.Config, opts render.Options) map[string][]byte {
	d := &HAProxy{opts: Options{Render: opts}}
	out := make(map[string][]byte)
	for _, f := range append(d.aclFiles(cfg), d.routeMapFiles(cfg)...) {
		out[f.path] = f.body
	}
	if path, body, ok := extAuthFile(cfg, opts); ok {
		out[path] = body
	}
	if path, ok := issuerMapFile(opts, cfg); ok {
		out[path] = nil
	}
	return out
}
