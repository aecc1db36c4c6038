package runtimeapi

import (
	"os"

	"github.com/haproxy-k8s-sync/haproxy-k8s-sync/internal/model"
	"github.com/haproxy-k8s-sync/haproxy-k8s-sync/internal/render"
)

// SetStatsPage replaces where the stats page listens and its credentials
// (re-read from their file). When they change, the next pass reloads with
// reason, which must not carry secrets. Only these fields of the render
// options change, and Legacy (upgrade.go): the others are read without
// the lock.
func (d *HAProxy) SetStatsPage(bind model.Bind, auth render.StatsAuth, reason string) {
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.opts.Render.Stats == bind && d.opts.Render.StatsAuth == auth {
		return
	}
	d.opts.Render.Stats, d.opts.Render.StatsAuth = bind, auth
	d.optsReason = reason
}

// protectConfig makes the temporary config file readable by its owner
// only when it carries credentials.
func protectConfig(tmp string, opts render.Options) error {
	if !opts.HasSecrets() {
		return nil
	}
	return os.Chmod(tmp, 0o600)
}
