package tproxy

import (
	"net/netip"
	"slices"
	"strings"

	"github.com/haproxy-k8s-sync/haproxy-k8s-sync/internal/model"
	"github.com/haproxy-k8s-sync/haproxy-k8s-sync/internal/render"
)

// wantSet is the elements the sets should hold (the listened binds of
// the last model), kept by frontend from pass to pass (issue 29): a walk
// of both passes' frontends, sorted by name, finds the few that changed
// (other binds, backend or listened state: render.Options.Listened asked
// only of those), and only their elements are looked at. Beside the set
// it keeps the elements that may differ from the kernel's (dirty): every
// element a pass touched, until the sets hold it as wanted. A pass then
// compares those with the kernel's, not every element twice. Frontends
// not sorted by name, or other options, are taken whole, and the next
// diff looks at every element.
type wantSet struct {
	http   bool // the fixed HTTP listener's elements (o.HTTPListened), not the TCP one's
	o      render.Options
	of     []model.Frontend        // the model's frontends last taken
	fronts []wantFront             // edited in place by a pass told its few frontends (named)
	count  map[netip.AddrPort]int  // listened frontends binding each element
	dirty  map[netip.AddrPort]bool // nil: every element may differ
	ok     bool
}

// wantFront is what the sets take of a frontend.
type wantFront struct {
	name     string
	binds    []model.Bind
	traits   render.ListenerTraits
	backend  string
	listened bool
}

func wantFrontOf(f model.Frontend, o render.Options, http bool) wantFront {
	return wantFront{name: f.Name, binds: f.Binds, traits: render.TraitsOf(&f), backend: f.Backend,
		listened: listenedBy(f, o, http)}
}

// same reports whether f is listened as wf was: the same binds (the very
// slice), backend and what the kind reads (render.ListenerTraits).
func (wf *wantFront) same(f *model.Frontend) bool {
	return wf.name == f.Name && wf.backend == f.Backend && wf.traits == render.TraitsOf(f) &&
		model.SameSlice(wf.binds, f.Binds)
}

// update takes cfg's frontends; fronts, when it says so, which of them
// changed against the last taken.
func (w *wantSet) update(cfg model.Config, fronts *model.FrontendChanges, o render.Options) {
	if w.ok && w.o == o && model.SameSlice(w.of, cfg.Frontends) {
		return // the same frontends (a pass's Remove, then its Apply)
	}
	defer func() { w.of = cfg.Frontends }()
	if !w.ok || w.o != o {
		w.whole(cfg, o)
		return
	}
	if names, ok := fronts.ChangedFrom(cfg.Frontends, w.of); ok && w.named(cfg, names, o) {
		return // the desired delta's few frontends, not a walk of all
	}
	if !model.FrontendsSorted(cfg.Frontends) {
		w.whole(cfg, o)
		return
	}
	next := newFronts(len(cfg.Frontends))
	i := 0
	for k := range cfg.Frontends {
		f := &cfg.Frontends[k]
		for i < len(w.fronts) && w.fronts[i].name < f.Name {
			w.take(w.fronts[i], -1)
			i++
		}
		if i < len(w.fronts) && w.fronts[i].name == f.Name {
			old := &w.fronts[i]
			i++
			if old.same(f) {
				next = append(next, *old)
				continue
			}
			w.take(*old, -1)
		}
		wf := wantFrontOf(*f, o, w.http)
		w.take(wf, 1)
		next = append(next, wf)
	}
	for ; i < len(w.fronts); i++ {
		w.take(w.fronts[i], -1)
	}
	w.swap(next)
}

// named takes cfg's frontends when only those named (sorted) differ
// from the last taken (model.FrontendChanges): the others' wantFronts
// are copied in runs, unlooked at. False, nothing changed, when names
// are not sorted.
func (w *wantSet) named(cfg model.Config, names []string, o render.Options) bool {
	if !slices.IsSorted(names) {
		return false
	}
	if w.inPlace(cfg, names, o) {
		return true
	}
	next := newFronts(len(cfg.Frontends))
	i := 0 // in w.fronts
	for _, name := range names {
		j, had := slices.BinarySearchFunc(w.fronts[i:], name, byName)
		next = append(next, w.fronts[i:i+j]...)
		if i += j; had {
			w.take(w.fronts[i], -1)
			i++
		}
		if k, ok := model.FrontendIndex(cfg.Frontends, name); ok {
			wf := wantFrontOf(cfg.Frontends[k], o, w.http)
			w.take(wf, 1)
			next = append(next, wf)
		}
	}
	next = append(next, w.fronts[i:]...)
	w.swap(next)
	return true
}

func byName(wf wantFront, n string) int { return strings.Compare(wf.name, n) }

// inPlace takes the frontends named (sorted) by editing the array in
// place: a changed one replaced, a new one inserted, one gone deleted.
// False, nothing changed, when the new ones do not fit its capacity (a
// burst beyond its room, or more than inPlaceMost names: each insert
// moves the array's tail). One array is kept through the new Services'
// passes, not the pass before last's beside it (~1.9 MB at 10,000
// Services, the TCP and HTTP sets together; issue 29's peak).
func (w *wantSet) inPlace(cfg model.Config, names []string, o render.Options) bool {
	if len(names) > inPlaceMost {
		return false
	}
	n := len(w.fronts)
	for _, name := range names {
		_, had := slices.BinarySearchFunc(w.fronts, name, byName)
		_, ok := model.FrontendIndex(cfg.Frontends, name)
		switch {
		case ok && !had:
			n++
		case had && !ok:
			n--
		}
	}
	if n > cap(w.fronts) || cap(w.fronts) > n+n/16+64 {
		return false // no room, or far more than it needs (Services gone)
	}
	for _, name := range names {
		j, had := slices.BinarySearchFunc(w.fronts, name, byName)
		if had {
			w.take(w.fronts[j], -1)
		}
		k, ok := model.FrontendIndex(cfg.Frontends, name)
		if !ok {
			if had {
				w.fronts = slices.Delete(w.fronts, j, j+1)
			}
			continue
		}
		wf := wantFrontOf(cfg.Frontends[k], o, w.http)
		w.take(wf, 1)
		if had {
			w.fronts[j] = wf
		} else {
			w.fronts = slices.Insert(w.fronts, j, wf) // within its capacity
		}
	}
	return true
}

// inPlaceMost is the most frontends a pass edits in place: each insert
// or delete moves up to the whole array (~1 MB at 10,000 Services).
const inPlaceMost = 16

// newFronts is a pass's new array for n frontends, with a little room
// (n/64: 156 new Services at 10,000) for the passes that edit it in place
// (inPlace). slices.Grow of a full array grew it by a quarter each time
// new Services outgrew it (~0.35 MB at 10,000 kept through the run,
// issue 29's peak).
func newFronts(n int) []wantFront { return make([]wantFront, 0, n+n/64) }

// swap makes next the pass's array; the last one is dropped.
func (w *wantSet) swap(next []wantFront) { w.fronts = next }

func (w *wantSet) whole(cfg model.Config, o render.Options) {
	*w = wantSet{http: w.http, o: o, of: cfg.Frontends, count: make(map[netip.AddrPort]int, len(cfg.Frontends)), fronts: make([]wantFront, 0, len(cfg.Frontends))}
	for _, f := range cfg.Frontends {
		wf := wantFrontOf(f, o, w.http)
		w.take(wf, 1)
		w.fronts = append(w.fronts, wf)
	}
	w.ok = model.FrontendsSorted(cfg.Frontends)
}

// take counts wf's elements in (by 1) or out (by -1), each noted dirty.
func (w *wantSet) take(wf wantFront, by int) {
	if !wf.listened {
		return
	}
	for _, b := range wf.binds {
		e := netip.AddrPortFrom(b.Addr, b.Port)
		if n := w.count[e] + by; n > 0 {
			w.count[e] = n
		} else {
			delete(w.count, e)
		}
		if w.dirty != nil {
			w.dirty[e] = true
		}
	}
}

// wants reports whether the sets should hold e.
func (w *wantSet) wants(e netip.AddrPort) bool { return w.count[e] > 0 }

// diff is what takes applied (the kernel's elements) to the wanted ones:
// the elements to delete and those to add that add lets in.
func (w *wantSet) diff(applied map[netip.AddrPort]bool, add func(netip.AddrPort) bool) (del, adds []netip.AddrPort) {
	if w.dirty == nil {
		for e := range applied {
			if !w.wants(e) {
				del = append(del, e)
			}
		}
		for e := range w.count {
			if add(e) && !applied[e] {
				adds = append(adds, e)
			}
		}
		return del, adds
	}
	for e := range w.dirty {
		switch want := w.wants(e); {
		case !want && applied[e]:
			del = append(del, e)
		case want && !applied[e] && add(e):
			adds = append(adds, e)
		}
	}
	return del, adds
}

// settled notes that the kernel's elements are applied: the elements
// that hold what is wanted are no longer dirty.
func (w *wantSet) settled(applied map[netip.AddrPort]bool) {
	if w.dirty == nil {
		w.dirty = make(map[netip.AddrPort]bool)
		for e := range w.count {
			if !applied[e] {
				w.dirty[e] = true
			}
		}
		for e := range applied {
			if !w.wants(e) {
				w.dirty[e] = true
			}
		}
		return
	}
	for e := range w.dirty {
		if w.wants(e) == applied[e] {
			delete(w.dirty, e)
		}
	}
}

// unknown makes the next diff look at every element (the kernel's set was
// read back, or a batch failed).
func (w *wantSet) unknown() { w.dirty = nil }
