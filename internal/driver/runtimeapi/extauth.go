package runtimeapi

import (
	"bytes"
	"os"

	"github.com/haproxy-k8s-sync/haproxy-k8s-sync/internal/atomicfile"
	"github.com/haproxy-k8s-sync/haproxy-k8s-sync/internal/model"
	"github.com/haproxy-k8s-sync/haproxy-k8s-sync/internal/render"
)

// extAuthFile is the fixed Lua file of external authentication
// (render/extauth.go) when the config rendered from cfg loads it: written
// before a reload, never changed at runtime (an auth URL is a map entry).
func extAuthFile(cfg model.Config, opts render.Options) (path string, body []byte, ok bool) {
	if !render.ExtAuthLoaded(cfg, opts) {
		return "", nil, false
	}
	return render.ExtAuthLuaFile(opts.ACLDir), render.ExtAuthLua, true
}

// writeExtAuth writes the Lua file where cfg's config loads it, unless it
// holds that already.
func writeExtAuth(cfg model.Config, opts render.Options) error {
	path, body, ok := extAuthFile(cfg, opts)
	if !ok {
		return nil
	}
	if old, err := os.ReadFile(path); err == nil && bytes.Equal(old, body) {
		return nil
	}
	if err := os.MkdirAll(opts.ACLDir, 0o755); err != nil {
		return err
	}
	return atomicfile.Write(path, body, 0o644)
}
