package runtimeapi

import (
	"log/slog"
	"testing"

	"github.com/haproxy-k8s-sync/haproxy-k8s-sync/internal/model"
	"github.com/haproxy-k8s-sync/haproxy-k8s-sync/internal/render"
)

// TestAdoptRenderingSkipsWhatCannotMatch: a controller's first pass looks
// for an older rendering of its model in the config HAProxy runs only when
// that config, as read back, has the model's backends. At a fresh start
// HAProxy runs init's config, which has none: the pass takes the current
// hash at once instead of hashing the whole config once for each older
// rendering (issue 29's start: ~90 ms at 10,000 Services). A config with
// the backends is still searched, and a match is adopted
// (TestUpgradeKeepsOlderRendering runs that against HAProxy).
func TestAdoptRenderingSkipsWhatCannotMatch(t *testing.T) {
	slots := func(n int) []model.Slot { return make([]model.Slot, n) }
	desired := model.Layout{"_nodes": nil, "default_web": slots(2), "default_db": slots(1)}
	for _, tc := range []struct {
		name     string
		readBack model.Layout // what HAProxy runs, read back
		match    bool         // what the search finds
		calls    int          // searches
		want     string       // the hash the pass compares
		legacy   render.Legacy
	}{
		{"init's config: no backends", model.Layout{}, true, 0, "current", 0},
		{"init's config: no layout at all", nil, true, 0, "current", 0},
		{"one backend missing", model.Layout{"default_web": slots(2)}, true, 0, "current", 0},
		{"one backend without slots", model.Layout{"default_web": slots(2), "default_db": nil}, true, 0, "current", 0},
		{"every backend, an older rendering", model.Layout{"default_web": slots(2), "default_db": slots(1)}, true, 1, "older", render.LooseChecked},
		{"every backend, another config", model.Layout{"default_web": slots(3), "default_db": slots(1)}, false, 1, "current", 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			calls := 0
			old := matchRendering
			matchRendering = func(cfg model.Config, layout model.Layout, opts render.Options, running string) (render.Legacy, bool) {
				calls++
				return render.LooseChecked, tc.match
			}
			t.Cleanup(func() { matchRendering = old })
			d := &HAProxy{hash: "older", layout: tc.readBack, log: slog.New(slog.DiscardHandler)}
			if got := d.adoptRendering(model.Config{}, desired, "current"); got != tc.want {
				t.Errorf("hash %q, want %q", got, tc.want)
			}
			if calls != tc.calls {
				t.Errorf("%d searches for an older rendering, want %d", calls, tc.calls)
			}
			if d.opts.Render.Legacy != tc.legacy {
				t.Errorf("rendering %s, want %s", d.opts.Render.Legacy, tc.legacy)
			}
		})
	}
}
