package runtimeapi

import (
	"github.com/haproxy-k8s-sync/haproxy-k8s-sync/internal/model"
	"github.com/haproxy-k8s-sync/haproxy-k8s-sync/internal/render"
)

// adoptRendering is the structure hash of cfg and layout as HAProxy runs
// them, when the config it runs was read back (not written by this
// driver: a controller just started, after an upgrade of its binary
// while HAProxy kept running) and holds the same model written the way
// an older release wrote it (render.Legacy): the driver then keeps
// writing it that way (its render options carry the Legacy, for the
// passes and the files it persists) until a reload is due for another
// reason, which writes the current rendering. Otherwise it returns hash,
// the current rendering's, and the pass compares as before.
//
// A reload only to change how an unchanged model is written would cost a
// whole reload (every worker's runtime-only state, the old worker's
// connections draining, CPU at scale) for no change of what HAProxy
// serves.
func (d *HAProxy) adoptRendering(cfg model.Config, layout model.Layout, hash string) string {
	if hash == d.hash || !d.onlyReadBack() || d.hash == foreignHash || d.owesReload() != "" {
		// The same, written by this driver, unknown, not ours, or
		// a reload owed anyway (owed.go).
		return hash
	}
	if !d.readBackHolds(layout) {
		// A fresh start on init's config (issue 29: hashing the whole
		// config once for each combination of flags, ~90 ms at 10,000
		// Services, to find no match).
		return hash
	}
	legacy, ok := matchRendering(cfg, layout, d.opts.Render, d.hash)
	if !ok || legacy == d.opts.Render.Legacy {
		return hash
	}
	d.log.Info("HAProxy runs the desired configuration as an older release wrote it; kept until the next reload",
		"rendering", legacy.String(), "hash", d.hash, "current_hash", hash)
	d.opts.Render.Legacy = legacy
	return d.hash
}

// matchRendering is render.MatchRendering (a variable for the tests that
// count its calls).
var matchRendering = render.MatchRendering

// readBackHolds reports whether the config HAProxy runs, as read back,
// may be one that writes layout: it has slots in every backend that has
// slots in layout. Each rendering writes the same backends, so a config
// that lacks one (init's, which has none) is no rendering of this model,
// older or not. A spare whose slots are all absent is known only from the
// persisted file (restoreAbsent); without that file it reads as missing
// here, and the pass reloads rather than adopt a config whose slots it
// does not know.
func (d *HAProxy) readBackHolds(layout model.Layout) bool {
	for be, slots := range layout {
		if len(slots) > 0 && len(d.layout[be]) == 0 {
			return false
		}
	}
	return true
}
