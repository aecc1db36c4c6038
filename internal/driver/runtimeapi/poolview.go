package runtimeapi

import (
	"slices"

	"github.com/haproxy-k8s-sync/haproxy-k8s-sync/internal/model"
	"github.com/haproxy-k8s-sync/haproxy-k8s-sync/internal/spares"
)

// poolView keeps the last spares.View, so that a pass that changes only
// some backends' servers (model.Config.Changes: the common pass, endpoint
// and node churn) and leaves the pool as it was is viewed in the size of
// its change: the previous view with those spares' servers replaced, its
// Frontends the very same slice and Changes translated into the view's
// indices. The driver's servers-only path (fast.go) then takes it, as it
// takes such a pass without a pool.
type poolView struct {
	cfg  model.Config   // the model last viewed
	pool []spares.Spare // and its pool's spares
	view model.Config
	// index: model backend name -> index in view.Backends, when the
	// memo has none (spares.ViewMemo.IndexOf answers otherwise);
	// hasIndex: the last view is indexed, one way or the other.
	index    map[string]int
	hasIndex bool
	own      bool // some backends were out of the pool (of)
	// indexLater: index is built when derived needs it (ofLater).
	indexLater bool
	// memo keeps the spares' backends by object: a view made anew (a
	// new Service, a pool changed) copies only the spares whose occupant
	// or class changed, and the plan finds the rest the same pointers.
	memo spares.ViewMemo
}

// of returns the view of cfg with pool s, the backends own names out of
// the pool (spares.ViewExcept), and which of its frontends changed
// against the last view's (nil: unknown). fronts: which of cfg's
// changed against the last pass's (nil: unknown). Neither is kept.
func (v *poolView) of(s spares.State, cfg model.Config, fronts *model.FrontendChanges, own func(*model.Backend) bool) (model.Config, *model.FrontendChanges) {
	return v.view1(s, cfg, fronts, own, false)
}

// ofLater is of for the pool's growth, the first pass's at a start
// (issue 29's peak): the view's backends are the memo's, but its maps
// and the view's index are built by the next pass that needs them
// (spares.ViewMemo.ViewLater), not into this pass's live heap.
func (v *poolView) ofLater(s spares.State, cfg model.Config, own func(*model.Backend) bool) model.Config {
	out, _ := v.view1(s, cfg, nil, own, true)
	return out
}

func (v *poolView) view1(s spares.State, cfg model.Config, fronts *model.FrontendChanges, own func(*model.Backend) bool, later bool) (model.Config, *model.FrontendChanges) {
	if out, ok := v.derived(s, cfg); ok && v.own == (own != nil) {
		v.cfg, v.view = cfg, out
		v.cfg.Changes, v.view.Changes = nil, nil // hold no older arrays
		// The very Frontends of the last view: none changed.
		return out, nil
	}
	var out model.Config
	var viewFronts *model.FrontendChanges
	if later {
		out = v.memo.ViewLater(s, cfg, own)
	} else {
		out, viewFronts = v.memo.ViewExcept(s, cfg, fronts, own)
	}
	// v.pool is only compared (derived): the pool's own spares, which
	// nothing changes in place (the spares package copies before it
	// changes one), not a copy of every spare (48 B each, ~0.5 MB kept
	// at 10,000: issue 29's peak).
	v.cfg, v.pool, v.view, v.own = cfg, s.Spares, out, own != nil
	v.cfg.Changes = nil
	v.index, v.hasIndex, v.indexLater = nil, false, later
	if !later {
		v.indexOf()
	}
	return out, viewFronts
}

// find is the index in the last view's Backends of model backend name,
// the index built now if it was left (ofLater); false before any view.
func (v *poolView) find(name string) (int, bool) {
	if v.indexLater {
		v.indexOf()
		v.indexLater = false
	}
	if v.index == nil {
		return v.memo.IndexOf(name)
	}
	j, ok := v.index[name]
	return j, ok
}

// indexOf indexes the last view (v.view of pool v.pool).
func (v *poolView) indexOf() {
	v.hasIndex = true
	if v.memo.Indexed() {
		return // by the memo, kept by difference (spares/viewdelta.go)
	}
	index := make(map[string]int, len(v.view.Backends))
	// Each spare's occupant from one walk of the pool, not a search per
	// spare (s.ModelBackend): quadratic at 10,000 spares, 2.3 s of CPU in
	// 15 passes of the benchmark at 10,000 Services.
	occupant := make(map[string]string, len(v.pool))
	for _, sp := range v.pool {
		occupant[sp.Name] = sp.Occupant
	}
	for j, b := range v.view.Backends {
		name := b.Name
		if _, ok := spares.SpareIndex(name); ok {
			name = occupant[name]
		}
		if name != "" {
			index[name] = j
		}
	}
	v.index = index
}

// derived is the view of cfg derived from the last one, when cfg changes
// only servers of the last model viewed and the pool's spares are the
// same.
func (v *poolView) derived(s spares.State, cfg model.Config) (model.Config, bool) {
	ch := cfg.Changes
	if ch == nil || (!v.hasIndex && !v.indexLater) || !model.SameSlice(ch.Base, v.cfg.Backends) ||
		len(cfg.Backends) != len(v.cfg.Backends) || !model.SameSlice(cfg.Frontends, v.cfg.Frontends) ||
		!slices.Equal(s.Spares, v.pool) {
		return model.Config{}, false
	}
	backends := slices.Clone(v.view.Backends)
	idx := make([]int, 0, len(ch.Backends))
	for _, i := range ch.Backends {
		if i < 0 || i >= len(cfg.Backends) {
			return model.Config{}, false
		}
		b := cfg.Backends[i]
		j, ok := v.find(b.Name)
		if !ok {
			return model.Config{}, false // waiting: not in the view
		}
		backends[j] = backends[j].WithServers(b.Servers)
		idx = append(idx, j)
	}
	slices.Sort(idx)
	return model.Config{Frontends: v.view.Frontends, Backends: backends, UDP: cfg.UDP, HTTPSHeld: cfg.HTTPSHeld, HTTPSClaimed: cfg.HTTPSClaimed,
		Changes: &model.Changes{Base: v.view.Backends, Backends: idx}}, true
}
