package render

import (
	"slices"
	"strings"

	"github.com/haproxy-k8s-sync/haproxy-k8s-sync/internal/model"
)

// ListenerMemo gives ListenerEntries pass after pass from the frontends
// that changed (issue 29): a new Service among 10,000 is its own keys
// added to the entries kept, not 10,000 keys built, sorted and diffed
// again. A frontend is the same as in the last pass when its name,
// binds (the very slice: models share what did not change), backend,
// PROXY flag and what makes it listened (ListenerTraits) are; the walk over
// both passes' frontends, sorted by name, compares only those. Beside the
// entries it gives each map's edit from the last pass's entries (keys
// added, changed, deleted), which the driver hands to a worker that holds
// the last pass's file. Frontends not sorted by name, or other options,
// are computed whole. When the pass says which frontends changed against
// the very Frontends of the last call (model.FrontendChanges: the pool
// view's, or desired's delta), only those are looked at, their records
// edited in place (named). The zero value is ready; not safe for
// concurrent use. The slices it returns are its own until the next call.
type ListenerMemo struct {
	o         Options
	of        []model.Frontend      // the Frontends of the last call
	frontends []listenedFrontend    // the last pass's, in its order
	owners    map[string]keyOwner   // each key's first owner by frontend name
	more      map[string][]keyOwner // a key's other owners, by name: a key two frontends bind (rare)
	listen    []MapEntry            // sorted by key
	proxy     []MapEntry
	ok        bool
}

// listenedFrontend is what the listener maps take of a frontend.
type listenedFrontend struct {
	name     string
	binds    []model.Bind
	backend  string
	proxy    bool
	traits   ListenerTraits
	listened bool // by its one backend (ListenedBackend)
}

// keyOwner is a listened frontend binding a key: the first by name keeps
// the key, as in ListenerEntries. The first is kept by value in the
// owners' map (a slice of one per key was ~0.5 MB at 10,000 keys).
type keyOwner struct {
	frontend, backend string
	proxy             bool
}

// ListenerEdit is one map's change from the memo's last entries to its
// new ones: keys added and changed (their new entries) and deleted, each
// sorted by key.
type ListenerEdit struct {
	Add, Set []MapEntry
	Del      []string
}

// Empty reports whether e changes nothing.
func (e ListenerEdit) Empty() bool { return len(e.Add)+len(e.Set)+len(e.Del) == 0 }

// Entries are ListenerEntries(cfg, o), and each map's edit from the
// entries of the last call (known false on the first call, or after a
// call computed whole: the edits are then empty and mean nothing).
// fronts, when it says so, names the frontends of cfg that changed
// against the last call's (nil: unknown, every frontend compared).
func (m *ListenerMemo) Entries(cfg model.Config, fronts *model.FrontendChanges, o Options) (listen, proxy []MapEntry, listenEdit, proxyEdit ListenerEdit, known bool) {
	if !o.TProxy() {
		*m = ListenerMemo{}
		return nil, nil, ListenerEdit{}, ListenerEdit{}, false
	}
	touched := map[string]bool{}
	names, said := fronts.ChangedFrom(cfg.Frontends, m.of)
	switch {
	case m.ok && m.o == o && said && m.named(cfg, names, o, touched):
	case !m.ok || m.o != o || !model.FrontendsSorted(cfg.Frontends):
		m.whole(cfg, o)
		return m.listen, m.proxy, ListenerEdit{}, ListenerEdit{}, false
	default:
		m.walk(cfg, o, touched)
	}
	m.of = cfg.Frontends
	keys := make([]string, 0, len(touched))
	for k := range touched {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	for _, k := range keys {
		var lv, pv string
		if own, ok := m.owners[k]; ok {
			lv = own.backend
			if own.proxy {
				pv = "1"
			}
		}
		m.listen = setEntry(m.listen, k, lv, &listenEdit)
		m.proxy = setEntry(m.proxy, k, pv, &proxyEdit)
	}
	return m.listen, m.proxy, listenEdit, proxyEdit, true
}

// named takes cfg's frontends when only those named (sorted, each once)
// may differ from the last call's (model.FrontendChanges): the records
// are edited in place, the others not looked at (issue 29: the memo
// holds one array of the frontends, not a second one of the pass before
// last to build the next in, ~0.65 MB kept at 10,000 and 1.25 times that
// once grown). False, nothing changed, when names are not sorted.
func (m *ListenerMemo) named(cfg model.Config, names []string, o Options, touched map[string]bool) bool {
	if !slices.IsSorted(names) {
		return false
	}
	fs := m.frontends
	i := 0 // in fs
	for _, name := range names {
		j, had := slices.BinarySearchFunc(fs[i:], name, func(lf listenedFrontend, n string) int { return strings.Compare(lf.name, n) })
		i += j
		k, now := model.FrontendIndex(cfg.Frontends, name)
		switch {
		case had && now && fs[i].same(cfg.Frontends[k]):
			i++
		case had && now:
			m.drop(fs[i], touched)
			fs[i] = listenedOf(cfg.Frontends[k], o)
			m.take(fs[i], touched)
			i++
		case had:
			m.drop(fs[i], touched)
			fs = slices.Delete(fs, i, i+1) // the record left past len cleared: no binds held
		case now:
			lf := listenedOf(cfg.Frontends[k], o)
			m.take(lf, touched)
			fs = slices.Insert(grownBy(fs, 1), i, lf)
			i++
		}
	}
	m.frontends = fs
	return true
}

// grownBy is fs with room for n more records: as it is when it has it,
// else in an array of len(fs)+n and a 64th more (append's growth by a
// quarter would keep ~0.16 MB of room at 10,000 frontends).
func grownBy(fs []listenedFrontend, n int) []listenedFrontend {
	if cap(fs)-len(fs) >= n {
		return fs
	}
	out := make([]listenedFrontend, len(fs), len(fs)+n+len(fs)/64)
	copy(out, fs)
	return out
}

// walk takes cfg's frontends (sorted by name) by a walk of both calls'.
func (m *ListenerMemo) walk(cfg model.Config, o Options, touched map[string]bool) {
	// A pass not told what changed (a whole pass of desired) builds a
	// new array, at size; the memo keeps no second one (named).
	next := make([]listenedFrontend, 0, len(cfg.Frontends))
	i := 0
	for _, f := range cfg.Frontends {
		for i < len(m.frontends) && m.frontends[i].name < f.Name {
			m.drop(m.frontends[i], touched) // gone
			i++
		}
		var old *listenedFrontend
		if i < len(m.frontends) && m.frontends[i].name == f.Name {
			old = &m.frontends[i]
			i++
		}
		if old != nil && old.same(f) {
			next = append(next, *old)
			continue
		}
		if old != nil {
			m.drop(*old, touched)
		}
		lf := listenedOf(f, o)
		m.take(lf, touched)
		next = append(next, lf)
	}
	for ; i < len(m.frontends); i++ {
		m.drop(m.frontends[i], touched)
	}
	m.frontends = next
}

// whole computes the entries as ListenerEntries does and keeps what the
// next call compares.
func (m *ListenerMemo) whole(cfg model.Config, o Options) {
	listen, proxy := ListenerEntries(cfg, o)
	*m = ListenerMemo{o: o, of: cfg.Frontends, listen: listen, proxy: proxy, owners: make(map[string]keyOwner, len(cfg.Frontends)),
		frontends: make([]listenedFrontend, 0, len(cfg.Frontends))}
	for _, f := range cfg.Frontends {
		lf := listenedOf(f, o)
		m.frontends = append(m.frontends, lf)
		m.take(lf, nil)
	}
	m.ok = model.FrontendsSorted(cfg.Frontends)
}

// take records lf's keys, marking them touched.
func (m *ListenerMemo) take(lf listenedFrontend, touched map[string]bool) {
	if !lf.listened {
		return
	}
	for _, b := range lf.binds {
		k := ListenerKey(b.Addr, b.Port)
		if touched == nil {
			k = m.keyOf(k)
		}
		o := keyOwner{frontend: lf.name, backend: lf.backend, proxy: lf.proxy}
		first, ok := m.owners[k]
		switch {
		case !ok:
			m.owners[k] = o
		case first.frontend == lf.name || slices.ContainsFunc(m.more[k], func(o keyOwner) bool { return o.frontend == lf.name }):
			continue // a frontend binding a key twice owns it once
		case lf.name < first.frontend:
			m.owners[k] = o
			m.addMore(k, first)
		default:
			m.addMore(k, o)
		}
		if touched != nil {
			touched[k] = true
		}
	}
}

// addMore records o as another owner of k (not its first).
func (m *ListenerMemo) addMore(k string, o keyOwner) {
	if m.more == nil {
		m.more = map[string][]keyOwner{}
	}
	rest := m.more[k]
	at, _ := slices.BinarySearchFunc(rest, o.frontend, func(r keyOwner, name string) int { return strings.Compare(r.frontend, name) })
	m.more[k] = slices.Insert(rest, at, o)
}

// keyOf is k with the bytes of the listen entry's key when there is one
// (the whole pass: ListenerEntries made its keys, and the owners' map
// would hold a second copy of each, ~0.3 MB at 10,000 keys).
func (m *ListenerMemo) keyOf(k string) string {
	if i, ok := slices.BinarySearchFunc(m.listen, k, func(e MapEntry, k string) int { return strings.Compare(e.Key, k) }); ok {
		return m.listen[i].Key
	}
	return k
}

// drop forgets lf's keys, marking them touched.
func (m *ListenerMemo) drop(lf listenedFrontend, touched map[string]bool) {
	if !lf.listened {
		return
	}
	for _, b := range lf.binds {
		k := ListenerKey(b.Addr, b.Port)
		rest := m.more[k]
		if first, ok := m.owners[k]; ok && first.frontend == lf.name {
			if len(rest) == 0 {
				delete(m.owners, k)
			} else {
				m.owners[k] = rest[0] // before the delete moves it
				rest = slices.Delete(rest, 0, 1)
			}
		} else {
			rest = slices.DeleteFunc(rest, func(o keyOwner) bool { return o.frontend == lf.name })
		}
		if len(rest) == 0 {
			delete(m.more, k)
		} else {
			m.more[k] = rest
		}
		touched[k] = true
	}
}

// listenedOf is what the listener maps take of f.
func listenedOf(f model.Frontend, o Options) listenedFrontend {
	return listenedFrontend{name: f.Name, binds: f.Binds, backend: f.Backend, proxy: f.AcceptProxy,
		traits: TraitsOf(&f), listened: o.ListenerKindOf(f) == ListenedBackend}
}

// same reports whether f gives the listener maps what lf gave: then
// Options.Listened(f) is lf's too, without being asked again.
func (lf *listenedFrontend) same(f model.Frontend) bool {
	return lf.name == f.Name && lf.backend == f.Backend && lf.proxy == f.AcceptProxy &&
		lf.traits == TraitsOf(&f) && model.SameSlice(lf.binds, f.Binds)
}

// setEntry gives key the value v in entries (sorted by key; v "": no
// entry) and notes the change in e.
func setEntry(entries []MapEntry, key, v string, e *ListenerEdit) []MapEntry {
	i, found := slices.BinarySearchFunc(entries, key, func(a MapEntry, k string) int { return strings.Compare(a.Key, k) })
	switch {
	case found && v == "":
		e.Del = append(e.Del, key)
		return slices.Delete(entries, i, i+1)
	case found && entries[i].Value != v:
		entries[i].Value = v
		e.Set = append(e.Set, entries[i])
	case !found && v != "":
		entries = slices.Insert(entries, i, MapEntry{key, v})
		e.Add = append(e.Add, entries[i])
	}
	return entries
}
