package gateway

import (
	"slices"
	"strings"

	"github.com/haproxy-k8s-sync/haproxy-k8s-sync/internal/model"
)

// A table spliced (issue 30): in a spliced pass (splice.go) the
// listeners' lists are the last pass's changed at a few places, and
// each of the table's listeners has a place per route (an HTTP
// listener serves every route it takes; statusOnly ones have no table).
// When those places leave every other where it was (a route replaced at
// its place with as many actions, or routes added or removed after the
// others of the table's last listener), the other places are the last
// table's: their route, fragment, names, age and first action's place.
// The last table's memo is then changed at the changed places alone:
// their slots, their hosts in the index, their hosts built again
// (rebuild), the actions written at their places (past every table's
// length, or into a copy of the array when a place in the middle gets
// new ones: tables are never changed once made), the backends the
// table's places use counted by name. A place that matches through any
// host or a wildcard, or whose actions name headers of the table's
// shape, or a change that moves places, is left to tableOf's walk.
// The result is the walk's (TestSpliceIsTheWholeCompute).

// tableBackend is a backend a table's places use, and how many do.
type tableBackend struct {
	b *model.Backend
	n int
}

// tableChange is a changed place of a spliced table: listener i's place
// j, the last table's slot there (nil: none) and the new one (ok: one).
type tableChange struct {
	i, j int
	was  *tableSlot
	now  tableSlot
	ok   bool
}

// spliceTable is table t of ls (newTable's, of this scheme) built from
// the last one (old) at its changed places, when it may be (see above);
// false: tableOf's walk builds it. A fragment it compiles for a new
// place is the memo's, which the walk takes then.
func (w *world) spliceTable(t *model.HTTP, ls []*listener, scheme string, old *tableMemo, backends map[string]*model.Backend) bool {
	m := w.memo
	if w.edits == nil || old == nil || old.scheme != scheme || len(old.ls) != len(ls) || old.shape == nil {
		return false
	}
	var ch []tableChange
	for i, l := range ls {
		if old.lhosts[i] != l.hostname {
			return false
		}
		in := old.ls[i]
		ed := w.edits[w.lindex[l]]
		if ed == nil {
			if len(in.slots) != len(l.routes) {
				return false
			}
			continue
		}
		n := len(l.routes)
		if len(in.slots) != ed.before || (n != ed.before && i != len(ls)-1) {
			return false // not a place per route; a tail changed before another listener's actions
		}
		k := min(n, ed.before)
		for _, p := range ed.rem {
			if p < k && !slices.Contains(ed.ins, p) {
				return false // the places after it move
			}
		}
		for _, q := range ed.ins {
			if q < k && !slices.Contains(ed.rem, q) {
				return false
			}
		}
		for _, j := range mergedPlaces(ed.rem, ed.ins) {
			c := tableChange{i: i, j: j}
			if j < len(in.slots) {
				c.was = &in.slots[j]
			}
			if j < n {
				a := l.routes[j]
				if !a.served || a.r.http == nil {
					return false
				}
				f := w.fragment(a, t.Port, scheme, backends) // memo.go
				c.now, c.ok = tableSlot{r: a.r, e: a.r.e, f: f, snis: a.snis, age: j}, true
			}
			ch = append(ch, c)
		}
	}
	for _, c := range ch {
		if c.was != nil && (!exactHosts(c.was) || c.was.f.actionNames() != nil) ||
			c.ok && (!exactHosts(&c.now) || c.now.f.actionNames() != nil) ||
			c.was != nil && c.ok && len(c.was.f.actions) != len(c.now.f.actions) {
			return false
		}
	}
	if old.brefs == nil {
		old.countBackends() // once after a walk
	}
	// The actions: the last table's array while places keep theirs and
	// new ones go past every table's length over it.
	base, hw := old.t.Actions, old.actsHW
	end := len(base)
	copied := false
	for _, c := range ch {
		if !c.ok {
			end = min(end, c.was.off) // removed at the end
		}
		copied = copied || c.was != nil && c.ok && len(c.now.f.actions) > 0
	}
	acts := base[:end]
	if copied {
		acts = append(make([]model.HTTPAction, 0, end+end/64+8), acts...)
	}
	for ci := range ch {
		c := &ch[ci]
		if !c.ok {
			continue
		}
		n := len(c.now.f.actions)
		if c.was != nil {
			c.now.off = c.was.off
			copy(acts[c.now.off:], c.now.f.actions)
		} else {
			c.now.off = len(acts)
			if !copied && (len(acts) < hw || len(acts)+n > cap(acts)) {
				acts = append(make([]model.HTTPAction, 0, len(acts)+len(acts)/64+8+n), acts...)
				copied = true
			}
			acts = append(acts, c.now.f.actions...)
		}
		c.now.f.actions = acts[c.now.off : c.now.off+n : c.now.off+n] // the table's own, as tableOf has them
	}
	// The index and the slots: the old hosts out, the new ones in, each
	// host of either built again.
	dirty := map[string]bool{}
	for _, c := range ch {
		if c.was != nil {
			old.unref(c.was.f)
			for _, h := range c.was.hosts() {
				dirty[h] = true
				old.ls[c.i].unindex(h, c.j)
			}
		}
	}
	for _, c := range ch {
		in := old.ls[c.i]
		switch {
		case c.ok && c.was != nil:
			in.slots[c.j] = c.now
		case c.ok:
			in.slots = append(in.slots, c.now) // ascending, at the end
		}
	}
	for i, l := range ls {
		if in := old.ls[i]; len(in.slots) > len(l.routes) {
			clear(in.slots[len(l.routes):])
			in.slots = in.slots[:len(l.routes)]
		}
	}
	for _, c := range ch {
		if c.ok {
			old.ref(c.now.f)
			for _, h := range c.now.hosts() {
				dirty[h] = true
				old.ls[c.i].index(h, c.j)
			}
		}
	}
	old.rebuild(dirty, false, nil) // tablerebuild.go
	for name, tb := range old.brefs {
		if _, ok := backends[name]; !ok {
			backends[name] = tb.b
		}
	}
	t.Actions = acts
	if len(acts) == 0 {
		t.Actions = nil // as httpTable leaves it
	}
	if copied {
		old.actsHW = len(acts)
	} else {
		old.actsHW = max(hw, len(acts))
	}
	s := *old.shape // the places' action names unchanged (none at the changed places)
	s.HeaderSets = old.headerSets()
	t.SetShape(&s)
	t.Hosts = old.t.Hosts
	old.t, old.shape = t, &s
	old.pass = m.pass
	m.TablesSpliced++
	return true
}

// mergedPlaces are the places of a and b (ascending), each once.
func mergedPlaces(a, b []int) []int {
	out := slices.Concat(a, b)
	slices.Sort(out)
	return slices.Compact(out)
}

// exactHosts: s matches through exact host names alone (no any host, no
// wildcard: those build other hosts' rules too).
func exactHosts(s *tableSlot) bool {
	return !slices.ContainsFunc(s.hosts(), notExact)
}

// notExact: h is the any host or a wildcard, whose rules build other
// hosts' too (a table edited host by host cannot take it).
func notExact(h string) bool { return h == model.AnyHost || strings.HasPrefix(h, "*.") }

// countBackends counts the backends of the table's places.
func (tm *tableMemo) countBackends() {
	tm.brefs = map[string]*tableBackend{}
	for _, in := range tm.ls {
		for j := range in.slots {
			tm.ref(in.slots[j].f)
		}
	}
}

func (tm *tableMemo) ref(f *fragment) {
	for _, b := range f.backends {
		if tb := tm.brefs[b.Name]; tb != nil {
			tb.n++
		} else {
			tm.brefs[b.Name] = &tableBackend{b: b, n: 1}
		}
	}
}

func (tm *tableMemo) unref(f *fragment) {
	for _, b := range f.backends {
		if tb := tm.brefs[b.Name]; tb != nil {
			if tb.n--; tb.n <= 0 {
				delete(tm.brefs, b.Name)
			}
		}
	}
}
