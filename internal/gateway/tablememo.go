package gateway

import (
	"slices"
	"strings"

	"github.com/haproxy-k8s-sync/haproxy-k8s-sync/internal/model"
)

// An HTTP frontend's table kept between passes (issue 30): httpTable is
// a pure function of its listeners' hostnames and, per listener, the
// served routes in order with their compiled rules (fragments), their
// ages and their first actions' places. The memo keeps that input, an
// index of it by host, and the table it gave; a pass compares the new
// input with the kept one place by place, and builds again only the
// hosts whose rules came from a place that differs (a route changed,
// added or deleted, its rules moved): the other hosts' rules are the
// last table's, shared (a model's table is never changed once made).
// A changed place that matches through a wildcard or any host, a
// listener set that differs, or more than a quarter of the places
// changed: every host is built again, from the index. The result is
// httpTable's (TestTableMemoIsTheWholeTable, TestMemoIsTheWholeCompute).

// tableKey is an HTTP frontend: its Gateway and port.
type tableKey struct {
	gw   Key
	port uint16
}

// tableMemo is one frontend's table and what it was built from.
type tableMemo struct {
	pass          int
	scheme        string
	lhosts        []string      // the listeners' hostnames, in table order
	ls            []*tableInput // per listener
	t             *model.HTTP
	owner         []int          // per host of t, the listener whose rules it has
	owners        map[string]int // the same by host name
	spare         [][]tableSlot  // per listener, the slots of the pass before the last (tablestamps.go)
	actsHW        int            // the largest length a table has had over t.Actions' array (tableactions.go)
	inPlace       bool           // the last update matched the places place by place (tableinplace.go)
	remap, owner0 []int          // arrays update reuses: its renumbering, the owners before the last
	// The header sets of t's rules, counted, and their sorted list (nil:
	// to be made again); buffers for their keys (tableshape.go).
	sets    map[string]*headerSet
	hsets   [][]string
	nameBuf []string
	keyBuf  []byte
	shape   *model.HTTPShape         // t's
	brefs   map[string]*tableBackend // the backends of t's places, counted; nil: not yet (tablesplice.go)
}

// tableInput is one listener's part: its served routes, in order, and
// their places by the host they match through.
type tableInput struct {
	slots  []tableSlot
	byHost map[string][]int // ascending
	wild   []string         // the wildcard hosts of byHost
}

// tableSlot is a served route's place in the table.
type tableSlot struct {
	r    *route
	e    *routeEntry // r's entry when f was taken from it
	f    *fragment
	snis []string
	age  int // the route's place among the listener's routes
	off  int // its first action's place in the table's Actions
}

func (s *tableSlot) same(o *tableSlot) bool {
	return s.r == o.r && s.f == o.f && s.age == o.age && s.off == o.off &&
		sameNames(s.snis, o.snis) // tableinplace.go
}

// hosts are the table hosts s's rules match through (none without a
// rule: httpTable has no host for such a route).
func (s *tableSlot) hosts() []string {
	if len(s.f.matches) == 0 {
		return nil
	}
	out := make([]string, len(s.snis))
	for i, h := range s.snis {
		if h == "" {
			h = model.AnyHost
		}
		out[i] = h
	}
	return out
}

// tableOf is httpTable(ls, port, w, backends), built from the last
// pass's table of this frontend where its input is the same. Without a
// memo in use, httpTable.
func (w *world) tableOf(ls []*listener, port uint16, backends map[string]*model.Backend) *model.HTTP {
	m := w.memo
	if m == nil || !m.on {
		return httpTable(ls, port, w, backends)
	}
	t, scheme := newTable(ls, port)
	k := tableKey{w.serving, port}
	old := m.tables[k]
	if w.spliceTable(t, ls, scheme, old, backends) { // tablesplice.go: a spliced pass's few places
		return t
	}
	lhosts := make([]string, len(ls))
	slots := make([][]tableSlot, len(ls))
	var spare, last [][]tableSlot
	n, acts := 0, actionsOf{} // tableactions.go
	var names model.HTTPShape // the places' action names (tableshape.go)
	if old != nil {           // room for a few more: a new route must not copy them all again
		acts = actionsOf{base: old.t.Actions, hw: old.actsHW, room: len(old.t.Actions) + len(old.t.Actions)/64 + 8}
		spare, last = old.spare, old.slots()
	}
	for i, l := range ls {
		lhosts[i] = l.hostname
		slots[i] = reslot(spare, i, len(l.routes)) // grown no more: thousands
		for age, a := range l.routes {
			if !a.served || a.r.http == nil {
				continue
			}
			var f *fragment
			if j := len(slots[i]); old != nil && old.scheme == scheme && i < len(last) && j < len(last[i]) {
				f = w.lastFragment(a, &last[i][j], backends) // tableinplace.go
			}
			if f == nil {
				f = w.fragment(a, port, scheme, backends) // memo.go
			}
			slots[i] = append(slots[i], tableSlot{r: a.r, e: a.r.e, f: f, snis: a.snis, age: age, off: acts.len()})
			acts.add(f.actions)
			if an := f.actionNames(); an != nil {
				names.Add(an)
			}
			n++
		}
	}
	t.Actions = acts.done()
	if len(t.Actions) == 0 {
		t.Actions = nil // as httpTable leaves it
	}
	for _, ss := range slots {
		for _, s := range ss {
			// The kept fragments' actions are the table's own, not a
			// second copy of them (the same values: neither changes).
			if n := len(s.f.actions); n == 0 || &s.f.actions[0] != &t.Actions[s.off] {
				s.f.actions = t.Actions[s.off : s.off+n : s.off+n]
			}
		}
	}
	if old == nil || old.scheme != scheme || !slices.Equal(old.lhosts, lhosts) || !old.update(slots, n, &m.stamps) {
		old = &tableMemo{scheme: scheme, lhosts: lhosts}
		old.whole(slots)
		m.TablesWhole++
	} else {
		m.TablesIncremental++
		if old.inPlace {
			m.TablesInPlace++
		}
	}
	old.pass = m.pass
	old.spare = last // no longer read: the next pass's slots
	t.Hosts = old.t.Hosts
	t.SetShape(old.shapeOf(names)) // tableshape.go
	old.t, old.actsHW, old.shape, old.brefs = t, acts.hw, t.KeptShape(), nil
	m.tables[k] = old
	return t
}

// whole indexes slots and builds every host.
func (tm *tableMemo) whole(slots [][]tableSlot) {
	tm.ls = make([]*tableInput, len(slots))
	var keys []string
	tm.owners = map[string]int{}
	for i, ss := range slots {
		in := newTableInput(ss)
		for j := range ss {
			for _, h := range ss[j].hosts() {
				if _, ok := tm.owners[h]; !ok {
					tm.owners[h] = i
					keys = append(keys, h)
				}
			}
		}
		tm.ls[i] = in
	}
	slices.SortFunc(keys, func(a, b string) int { return cmpHost(tm.owners[a], a, tm.owners[b], b) })
	t := &model.HTTP{}
	tm.owner = make([]int, len(keys))
	for i, h := range keys {
		o := tm.owners[h]
		tm.owner[i] = o
		t.Hosts = append(t.Hosts, tm.ls[o].host(h))
	}
	tm.t = t
	tm.countAll() // tableshape.go
}

// update brings the index to slots and builds again the hosts whose
// places changed; false when the whole table is to be built instead.
// A place is matched with the last table's by its route: one whose
// route, rules and names are the same is kept wherever it is now (a
// route older than it came or went, or changed its number of actions:
// its own moved), and the hosts it alone serves keep their rules, their
// actions renumbered (moved: the last table's action places to the new
// ones); the others' hosts are built again.
func (tm *tableMemo) update(slots [][]tableSlot, n int, st *stamper) bool {
	dirty := map[string]bool{}
	tm.inPlace = tm.placeByPlace(slots, dirty) // tableinplace.go
	if tm.inPlace {
		tm.rebuild(dirty, false, nil)
		return true
	}
	changed := 0
	remap := slices.Grow(tm.remap[:0], len(tm.t.Actions))[:len(tm.t.Actions)] // a kept action's new place; -1: gone
	tm.remap = remap
	for i := range remap {
		remap[i] = -1
	}
	moved := make([]bool, len(tm.ls)) // a listener whose places moved
	renumber := false
	dirtyHosts := func(s *tableSlot) bool {
		for _, h := range s.hosts() {
			if notExact(h) { // tablesplice.go
				return false
			}
			dirty[h] = true
		}
		return true
	}
	for i, in := range tm.ls {
		ss := slots[i]
		was, now := st.next(), st.next() // tablestamps.go
		markOld(in.slots, was)
		kept := make([]bool, len(in.slots))
		for j := range ss {
			s := &ss[j]
			if seenTwice(s.r, now) {
				return false // a route on a listener twice (two parentRefs): by place only
			}
			if o, ok := oldPlace(s.r, in.slots, was); ok && in.slots[o].f == s.f && slices.Equal(in.slots[o].snis, s.snis) {
				kept[o] = true
				old := &in.slots[o]
				if o != j || old.age != s.age || old.off != s.off {
					moved[i] = true
				}
				renumber = renumber || old.off != s.off
				for k := range s.f.actions {
					remap[old.off+k] = s.off + k
				}
				continue
			}
			if changed++; changed > 8 && changed*4 > n {
				return false
			}
			if !dirtyHosts(s) {
				return false
			}
		}
		for j := range in.slots {
			if kept[j] {
				continue
			}
			if changed++; changed > 8 && changed*4 > n {
				return false
			}
			if !dirtyHosts(&in.slots[j]) {
				return false
			}
		}
	}
	// The index: a listener whose places moved indexed again, else each
	// changed place's old hosts out, its new ones in.
	for i, in := range tm.ls {
		ss := slots[i]
		if moved[i] {
			*in = *newTableInput(ss)
			continue
		}
		for j := range max(len(in.slots), len(ss)) {
			if j < len(in.slots) && j < len(ss) && in.slots[j].same(&ss[j]) {
				continue
			}
			if j < len(in.slots) {
				for _, h := range in.slots[j].hosts() {
					in.unindex(h, j)
				}
			}
			if j < len(ss) {
				for _, h := range ss[j].hosts() {
					in.index(h, j)
				}
			}
		}
		in.slots = ss
	}
	tm.rebuild(dirty, renumber, remap)
	return true
}

// newTableInput indexes a listener's places by host.
func newTableInput(ss []tableSlot) *tableInput {
	in := &tableInput{slots: ss, byHost: map[string][]int{}}
	for j := range ss {
		for _, h := range ss[j].hosts() {
			if _, ok := in.byHost[h]; !ok && strings.HasPrefix(h, "*.") {
				in.wild = append(in.wild, h)
			}
			in.byHost[h] = append(in.byHost[h], j)
		}
	}
	return in
}

func (in *tableInput) index(h string, j int) {
	at, _ := slices.BinarySearch(in.byHost[h], j)
	in.byHost[h] = slices.Insert(in.byHost[h], at, j)
}

func (in *tableInput) unindex(h string, j int) {
	if at, ok := slices.BinarySearch(in.byHost[h], j); ok {
		in.byHost[h] = slices.Delete(in.byHost[h], at, at+1)
	}
	if len(in.byHost[h]) == 0 {
		delete(in.byHost, h)
	}
}

// host is table host k of this listener: the rules matching through k,
// any host and the wildcards covering k, in the spec's order, each
// match once (as httpTable builds it).
func (in *tableInput) host(k string) model.HTTPHost {
	var rs []httpRule
	add := func(h string) {
		for _, j := range in.byHost[h] {
			s := &in.slots[j]
			for _, fm := range s.f.matches {
				cm := fm.rule
				cm.Action += s.off
				rs = append(rs, httpRule{host: h, rule: cm, age: s.age, ruleIdx: fm.ruleIdx, match: fm.match})
			}
		}
	}
	add(k)
	if k != model.AnyHost {
		add(model.AnyHost)
		for _, h := range in.wild {
			if h != k && hostCovers(h, k) {
				add(h)
			}
		}
	}
	return hostOf(k, rs) // httproute.go
}
