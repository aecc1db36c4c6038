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
	// renders counts the skeletons rendered (tests: a pass that changes
	// no structure renders none).
	renders int
}

// Renders is the number of skeletons m rendered so far (the tests of a
// producer's tables: a pass that changes no structure renders none).
func (m *HashMemo) Renders() int { return m.renders }

// StructureHash returns StructureHash(cfg, layout, opts).
func (m *HashMemo) StructureHash(cfg model.Config, layout model.Layout, opts Options) string {
	return m.StructureHashFrom(cfg, layout, opts, nil)
}

// StructureHashFrom is StructureHash for a layout made as delta says
// (plan.AssignDelta): when its base is the very layout last hashed, only
// the slots of the backends it names, and of the backends that are other
// objects, are compared (issue 29: two lookups of every backend's slots a
// pass otherwise). A nil delta, or one from another layout, is ignored.
func (m *HashMemo) StructureHashFrom(cfg model.Config, layout model.Layout, opts Options, delta *model.LayoutDelta) string {
	if delta != nil && !model.SameLayout(delta.Base, m.layout) {
		delta = nil
	}
	if m.valid && m.opts == opts && sameStructure(m.cfg, cfg, m.layout, layout, opts, delta) {
		m.cfg, m.layout = cfg, layout // same structure; drop references to the old servers
		return m.hash
	}
	m.hash = StructureHash(cfg, layout, opts)
	m.renders++
	m.valid, m.opts, m.cfg, m.layout = true, opts, cfg, layout
	return m.hash
}

// sameStructure compares what build writes in skeleton mode. With delta
// (lb made from la itself), a backend that is the same object in both
// and that delta does not name has the same slots too.
func sameStructure(a, b model.Config, la, lb model.Layout, opts Options, delta *model.LayoutDelta) bool {
	if len(a.Backends) != len(b.Backends) || !sameFrontendStructure(a.Frontends, b.Frontends, opts) {
		return false
	}
	for i := range a.Backends {
		// The same object (desired and the pool's view keep a backend
		// that did not change): the same skeleton, not compared again.
		if a.Backends[i] == b.Backends[i] {
			if delta != nil {
				continue // its slots: below, if delta names it
			}
		} else if !sameSkeleton(a.Backends[i], b.Backends[i]) {
			return false
		}
		if !sameSlots(la[a.Backends[i].Name], lb[b.Backends[i].Name]) {
			return false
		}
	}
	if delta != nil {
		for _, name := range delta.Changed {
			if !sameSlots(la[name], lb[name]) {
				return false
			}
		}
	}
	return true
}

// sameSlots reports whether two backends' slots write the same skeleton:
// as many slots (named by their place), each following the same node.
func sameSlots(sa, sb []model.Slot) bool {
	if len(sa) != len(sb) {
		return false
	}
	if model.SameSlice(sa, sb) {
		return true // the same slots (the plan package reuses them)
	}
	for j := range sa {
		if sa[j].Track != sb[j].Track {
			return false
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

// sameFrontendStructure compares the frontends as build writes them in
// skeleton mode. A frontend served by the fixed listener (Options.Listened)
// has no section: only a restricted one writes a rule, into its backend's
// section (listenedSources), which names it and its backend. So a new
// Service behind the listener (a map entry and a set element) is no
// structure, and is found so without rendering the skeleton of every
// other one (issue 29: ~13 ms a pass at 10,000 Services).
func sameFrontendStructure(a, b []model.Frontend, opts Options) bool {
	if model.SameSlice(a, b) {
		return true
	}
	if !opts.TProxy() {
		if len(a) != len(b) {
			return false
		}
		for i := range a {
			if !model.SameFrontend(&a[i], &b[i]) && !sameFrontendSkeleton(a[i], b[i]) {
				return false
			}
		}
		return true
	}
	// Both sides' skeleton frontends, in order, must be equal. A pair that
	// is the same value (model.SameFrontend: the view keeps a frontend
	// that did not change) writes the same either way and is passed at
	// once, without asking Listened of its binds; a skeletonless one is
	// passed on its own side. Which side is looked at first goes by name
	// (a Config's frontends are sorted), so that a frontend come or gone
	// puts the two sides back in step; any order gives the right answer,
	// only more Listened calls.
	i, j := 0, 0
	for i < len(a) || j < len(b) {
		if i < len(a) && j < len(b) && model.SameFrontend(&a[i], &b[j]) {
			i, j = i+1, j+1
			continue
		}
		if i < len(a) && (j == len(b) || a[i].Name <= b[j].Name) && skeletonless(a[i], opts) {
			i++
			continue
		}
		if j < len(b) && (i == len(a) || b[j].Name <= a[i].Name) && skeletonless(b[j], opts) {
			j++
			continue
		}
		if i < len(a) && skeletonless(a[i], opts) {
			i++
			continue
		}
		if j < len(b) && skeletonless(b[j], opts) {
			j++
			continue
		}
		if i == len(a) || j == len(b) {
			return false // a skeleton frontend on one side only
		}
		fa, fb := a[i], b[j]
		if opts.Listened(fa) != opts.Listened(fb) {
			return false
		}
		if opts.Listened(fa) {
			// Restricted, both: the rule names the frontend and goes
			// into its backend's section.
			if fa.Name != fb.Name || fa.Backend != fb.Backend {
				return false
			}
		} else if !sameFrontendSkeleton(fa, fb) {
			return false
		}
		i, j = i+1, j+1
	}
	return true
}

// sameFrontendSkeleton reports whether two frontends write the same
// skeleton: Equal, but two HTTP tables are compared by what the skeleton
// writes of them (sameHTTPSkeleton: their Shapes, which every producer
// sets), not route by route: a new route among 5,000 is no structure,
// and is found so without walking half the table and rendering the
// skeleton again (issue 30).
func sameFrontendSkeleton(a, b model.Frontend) bool {
	if ha, hb := a.HTTP, b.HTTP; ha != nil && hb != nil {
		if !sameHTTPSkeleton(ha, hb) {
			return false
		}
		a.HTTP, b.HTTP = nil, nil // compared; the rest of the frontends below
	}
	return a.Equal(b)
}

// sameHTTPSkeleton reports whether two HTTP tables write the same rules
// in the skeleton. writeHTTP and what it calls (http.go, httpaccess.go,
// httpauth.go, httpext.go, clientcert.go, extauth.go) read a table only
// through its Shape (HeaderSets, ModifiedHeaders, ResponseHeaders,
// BackendHeaders, HasAccess answer from it); the splitter
// (passthrough.go) only whether it has a Passthrough. Its hosts,
// actions, Port and Listeners are map entries, and the frontend's TLS
// and binds are compared with the frontend.
func sameHTTPSkeleton(a, b *model.HTTP) bool {
	return (a.Passthrough == nil) == (b.Passthrough == nil) && a.SameShape(b)
}

// skeletonless reports whether f writes nothing into the skeleton: a
// frontend behind the fixed listener with no source ranges.
func skeletonless(f model.Frontend, opts Options) bool {
	return !f.Restricted() && opts.Listened(f)
}

// sameSkeleton is SameStructure but for the Service, which the skeleton
// does not write (only the config's "# serves" comment of a spare): a
// spare of the pool taken by a new Service, or given back, is the same
// skeleton.
func sameSkeleton(a, b *model.Backend) bool {
	if a.SameStructure(b) {
		return true
	}
	if a.Service == b.Service {
		return false
	}
	x, y := *a, *b
	x.Service, y.Service = "", ""
	return x.SameStructure(&y)
}
