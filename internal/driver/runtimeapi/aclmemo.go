package runtimeapi

import (
	"slices"

	"github.com/haproxy-k8s-sync/haproxy-k8s-sync/internal/model"
	"github.com/haproxy-k8s-sync/haproxy-k8s-sync/internal/render"
)

// rangedMemo keeps, from pass to pass, which backends of the model
// HAProxy runs carry a spare's own source-range rule
// (render.RangedSpares: the ACL files of aclFiles). A pass's view shares
// with the last one every backend whose spare did not change (the pool's
// view memo, spares.ViewMemo), so only the places whose backend is
// another object are looked at: a walk of pointers, not a read of each
// of 10,000 backends, twice a pass (issue 29). With another number of
// backends, the whole walk.
type rangedMemo struct {
	backends []*model.Backend // the last pass's
	ranged   []int            // render.RangedSpares of it
	opts     render.Options
}

// of is render.RangedSpares(cfg) (o: the driver's options).
func (m *rangedMemo) of(cfg model.Config, o render.Options) []int {
	if m.backends == nil || len(cfg.Backends) != len(m.backends) || m.opts != o {
		m.backends, m.ranged, m.opts = cfg.Backends, o.RangedSpares(cfg), o
		return m.ranged
	}
	ranged := m.ranged
	copied := false
	for i, be := range cfg.Backends {
		if be == m.backends[i] {
			continue
		}
		at, was := slices.BinarySearch(ranged, i)
		if now := o.SpareRanged(be); now != was {
			if !copied { // the last pass's answer stays its own
				ranged, copied = slices.Clone(ranged), true
			}
			if now {
				ranged = slices.Insert(ranged, at, i)
			} else {
				ranged = slices.Delete(ranged, at, at+1)
			}
		}
	}
	m.backends, m.ranged = cfg.Backends, ranged
	return ranged
}
