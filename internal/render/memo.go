package render

import "github.com/haproxy-k8s-sync/haproxy-k8s-sync/internal/model"

// HashMemo remembers the structure hash of the last config it hashed. When
// the next config has the same structure (same frontends, same backends but
// for their servers, same slot names, same options), which is the case of
// every pass that only moves servers, it returns that hash without rendering
// the skeleton again. The zero value is ready to use; it is not safe for
// concurrent use.
//
// It keeps references to the slices of the config and layout it last
// hashed: callers must not modify a config or layout after hashing it (the
// controller never does: every pass builds new ones).
type HashMemo struct {
	valid  bool
	opts   Options
	cfg    model.Config
	layout model.Layout
	hash   string
}

// StructureHash returns StructureHash(cfg, layout, opts).
func (m *HashMemo) StructureHash(cfg model.Config, layout model.Layout, opts Options) string {
	if m.valid && m.opts == opts && sameStructure(m.cfg, cfg, m.layout, layout) {
		m.cfg, m.layout = cfg, layout // same structure; drop references to the old servers
		return m.hash
	}
	m.hash = StructureHash(cfg, layout, opts)
	m.valid, m.opts, m.cfg, m.layout = true, opts, cfg, layout
	return m.hash
}

// sameStructure compares what build writes in skeleton mode.
func sameStructure(a, b model.Config, la, lb model.Layout) bool {
	if len(a.Frontends) != len(b.Frontends) || len(a.Backends) != len(b.Backends) {
		return false
	}
	if !model.SameSlice(a.Frontends, b.Frontends) {
		for i := range a.Frontends {
			if !a.Frontends[i].Equal(b.Frontends[i]) {
				return false
			}
		}
	}
	for i := range a.Backends {
		if !a.Backends[i].SameStructure(b.Backends[i]) {
			return false
		}
		sa, sb := la[a.Backends[i].Name], lb[b.Backends[i].Name]
		if len(sa) != len(sb) {
			return false
		}
		if model.SameSlice(sa, sb) {
			continue // the same slots (the plan package reuses them)
		}
		for j := range sa {
			if sa[j].Name != sb[j].Name || sa[j].Track != sb[j].Track {
				return false
			}
		}
	}
	return true
}

// Rebase makes m refer to cfg and layout instead of the config and layout
// it last hashed, for a caller that knows cfg and layout have the
// structure whose hash is hash (the driver after a pass that changed only
// servers): the old ones are then no longer kept alive by m. It does
// nothing if m's last hash is another.
func (m *HashMemo) Rebase(cfg model.Config, layout model.Layout, hash string) {
	if m.valid && m.hash == hash {
		m.cfg, m.layout = cfg, layout
	}
}
