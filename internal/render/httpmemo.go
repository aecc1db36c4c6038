package render

import (
	"encoding/binary"

	"github.com/haproxy-k8s-sync/haproxy-k8s-sync/internal/model"
)

// HTTPMapsMemo lowers a table as HTTPMaps does, but only the actions and
// hosts it has not seen in the previous call: each is kept, with the ids
// and entries it placed, under a key that is its whole content (an
// action's fields; a host's name, rules and the ids of the actions and
// header sets they name), and a table changed in one route lowers that
// route's action and host only. What it keeps is what the last call's
// table held (an action or host gone is forgotten at the next call).
// The result is HTTPMaps's, entry for entry, in the same order; a
// caller owns one per table (per frontend) and calls it from one
// goroutine. The zero value is ready.
type HTTPMapsMemo struct {
	actions, hosts map[string]*lowered
	setsKey        string // the header sets the hosts were lowered with
	buf            []byte
	sizes          map[string]int     // each kind's entries in the last table, and room to grow
	idTab          map[string]*idSlot // every id the held lowered things place (httpslots.go)
	clashes        int                // slots given by placements of two digests (httpslots.go)
	pass           uint64             // this call's stamp on the slots
	seenA          []seenAction       // the last table's actions and hosts by place (httpident.go)
	seenH          []seenHost
	spareA         []seenAction // the table's before, reused as the next one's: a pass allocates neither
	spareH         []seenHost
	usesA, usesH   useCounts // httpuses.go
	aids           []string  // the last table's actions' ids
	spareAids      []string  // the table's before, reused as the next one's
	// Lowered counts the actions and hosts the last call lowered (not
	// found in the memo): for tests and benchmarks.
	Lowered int
	// Same counts those the last call took by identity (httpident.go).
	Same int
	ed   memoEdits // httpedits.go
	// table is the table last given to Update, for Build; whole: Build
	// gives HTTPMaps(table) (nil, or an id of two contents); lis and pas
	// its listeners' and passthrough names' entries.
	table    *model.HTTP
	whole    bool
	lis, pas []HTTPMapEntry
}

// lowered is what lowering one action or host placed, in order.
type lowered struct {
	key     string
	id      string // an action's id
	places  []placement
	unnamed bool // placesUnnamed
}

// Maps returns HTTPMaps(h): Update, then Build.
func (m *HTTPMapsMemo) Maps(h *model.HTTP) map[string][]HTTPMapEntry {
	m.Update(h)
	return m.Build()
}

// Update takes h as the memo's table: it lowers the actions and hosts
// that changed and counts the edit from the previous table (Edits, which
// it returns), without building the table's whole maps: Build does,
// after it, so a caller can send the edit to HAProxy before (issue 30:
// a new route among thousands is its few entries' edit, and the whole
// maps and their files come after). Build gives h's maps until the next
// Update.
func (m *HTTPMapsMemo) Update(h *model.HTTP) (map[string]HTTPMapEdit, bool) {
	m.Lowered, m.Same = 0, 0
	m.table, m.whole, m.lis, m.pas = h, false, nil, nil
	if h == nil {
		m.whole = true
		m.forgetEdits()
		return m.Edits()
	}
	sets, setsKey := headerSetIDs(h)
	setsMoved := setsKey != m.setsKey
	if setsMoved || m.hosts == nil {
		m.setsKey, m.hosts = setsKey, map[string]*lowered{} // a set's id moved: every host is lowered again
	}
	if m.actions == nil {
		m.actions = map[string]*lowered{}
	}
	aids := grown(m.spareAids, len(h.Actions))
	seenA := grown(m.spareA, len(h.Actions))
	for ai := range h.Actions {
		a := &h.Actions[ai]
		l, ident := m.sameAction(ai, a) // httpident.go
		var old *lowered
		if ai < len(m.seenA) {
			old = m.seenA[ai].l
		}
		if l == nil {
			m.buf = actionKey(m.buf[:0], *a)
			l = m.find(m.actions, func(p *placer) string { return lowerAction(p, *a) })
		}
		seenA[ai] = seenAction{ident, l}
		m.usesA.move(old, l) // httpuses.go
		aids[ai] = l.id
	}
	for _, s := range m.seenA[min(len(m.seenA), len(h.Actions)):] {
		m.usesA.move(s.l, nil)
	}
	seenH := grown(m.spareH, len(h.Hosts))
	j := 0 // the last table's first place not yet aligned with this one's (httpident.go)
	for hi := range h.Hosts {
		host := &h.Hosts[hi]
		var l *lowered
		var ident hostIdent
		at := -1
		if !setsMoved {
			l, ident, at = m.sameHostNear(j, host, aids)
		} else {
			ident = identOfHost(host)
		}
		if l != nil {
			for _, s := range m.seenH[j:at] { // the last table's hosts skipped: gone
				m.usesH.move(s.l, nil)
			}
			j = at + 1
		} else {
			m.buf = hostKey(m.buf[:0], *host, aids)
			l = m.find(m.hosts, func(p *placer) string { lowerHost(p, *host, sets, aids); return "" })
			var old *lowered
			if m.replaces(j, h.Hosts[hi+1:], aids) {
				old = m.seenH[j].l
				j++
			}
			m.usesH.move(old, l)
		}
		seenH[hi] = seenHost{ident, l}
	}
	for _, s := range m.seenH[min(len(m.seenH), j):] {
		m.usesH.move(s.l, nil)
	}
	gone, came := m.usesA.settle(m.actions, nil, nil)
	gone, came = m.usesH.settle(m.hosts, gone, came)
	m.release(gone)                          // httpslots.go
	twice := m.usesA.multi+m.usesH.multi > 0 // counted once, written twice: no edit to count
	m.spareA, m.spareH = m.seenA, m.seenH
	m.seenA, m.seenH, m.aids, m.spareAids = seenA, seenH, aids, m.aids
	if !m.fits() {
		m.whole = true
		m.forgetEdits()
		return m.Edits()
	}
	named := map[string][]HTTPMapEntry{}
	listenerEntries(named, h.Listeners) // httpext.go
	passEntries(named, h.Passthrough)   // passthrough.go
	m.lis, m.pas = named[HTTPListeners], named[HTTPPass]
	if twice {
		m.forgetEdits()
	} else {
		m.countEdits(gone, came, m.lis, m.pas) // httpedits.go
	}
	return m.Edits()
}

// Build returns HTTPMaps of the table last given to Update: its lowered
// actions' and hosts' entries in their places, each id's once.
func (m *HTTPMapsMemo) Build() map[string][]HTTPMapEntry {
	if m.whole || m.table == nil {
		return HTTPMaps(m.table)
	}
	lists := make(kindLists, len(HTTPMapKinds))
	for i, k := range HTTPMapKinds {
		lists[i] = make([]HTTPMapEntry, 0, m.sizes[k]) // the last table's: a pass grows no slice
	}
	m.pass++
	for _, s := range m.seenA {
		addLowered(lists, m.pass, s.l) // fits: Update checked
	}
	for _, s := range m.seenH {
		addLowered(lists, m.pass, s.l)
	}
	out := lists.asMaps()
	if m.sizes == nil {
		m.sizes = make(map[string]int, len(out))
	}
	for k, es := range out {
		m.sizes[k] = len(es) + len(es)/8
	}
	out[HTTPListeners] = append(out[HTTPListeners], m.lis...)
	out[HTTPPass] = append(out[HTTPPass], m.pas...)
	return out
}

// grown is s with length n, reusing its array when it has room; its
// elements are the array's old ones (Update sets every one of them).
func grown[T any](s []T, n int) []T {
	if cap(s) < n {
		return make([]T, n)
	}
	return s[:n]
}

// find returns the lowered entry of m.buf's key in memo, or lowers it.
func (m *HTTPMapsMemo) find(memo map[string]*lowered, lower func(*placer) string) *lowered {
	if l, ok := memo[string(m.buf)]; ok {
		return l
	}
	m.Lowered++
	p := &placer{ids: contentIDs{}}
	id := lower(p)
	l := &lowered{key: string(m.buf), id: id, places: p.places}
	l.unnamed = l.placesUnnamed()
	m.intern(l)     // httpslots.go
	memo[l.key] = l // a second place of this content in this table takes it too
	return l
}

// The keys: every field, strings with their length, numbers as varints,
// so two contents never share a key. TestHTTPMemoKeysTakeEveryField
// fails when a field of the model is not in its key.

func keyString(b []byte, s string) []byte {
	b = binary.AppendUvarint(b, uint64(len(s)))
	return append(b, s...)
}

func keyInt(b []byte, n int64) []byte { return binary.AppendVarint(b, n) }

func keyBool(b []byte, v bool) []byte {
	if v {
		return append(b, 1)
	}
	return append(b, 0)
}

func keyHeaders(b []byte, hs []model.HeaderValue) []byte {
	b = keyInt(b, int64(len(hs)))
	for _, v := range hs {
		b = keyString(keyString(b, v.Name), v.Value)
	}
	return b
}

func keyMods(b []byte, m model.HeaderMods) []byte {
	b = keyHeaders(keyHeaders(b, m.Set), m.Add)
	b = keyInt(b, int64(len(m.Remove)))
	for _, n := range m.Remove {
		b = keyString(b, n)
	}
	return b
}

// actionKey appends a's content to b.
func actionKey(b []byte, a model.HTTPAction) []byte {
	b = keyInt(b, int64(len(a.Backends)))
	for _, w := range a.Backends {
		b = keyInt(keyString(b, w.Name), int64(w.Weight))
	}
	b = keyBool(b, a.Redirect != nil)
	if r := a.Redirect; r != nil {
		b = keyBool(keyInt(keyInt(keyString(keyString(b, r.Scheme), r.Host), int64(r.Port)), int64(r.Code)), r.StripSlash)
	}
	b = keyMods(b, model.HeaderMods{Set: a.Set, Add: a.Add, Remove: a.Remove})
	b = keyBool(b, a.Ext != nil)
	if x := a.Ext; x != nil {
		b = keyMods(b, x.Response)
		b = keyInt(b, int64(len(x.BackendMods)))
		for _, bm := range x.BackendMods {
			b = keyMods(b, bm)
		}
		b = keyBool(b, x.Path != nil)
		if p := x.Path; p != nil {
			b = keyInt(keyBool(keyString(b, p.Replace), p.Prefix), int64(p.Strip))
		}
		b = keyInt(keyInt(keyString(b, x.Host), int64(x.Timeout)), int64(x.Connect))
		b = keyCORS(b, x.CORS) // cors.go
	}
	return accessKey(b, a.Access) // httpaccess.go
}

// hostKey appends host's content to b: its name, and each rule with the
// id of its action (the header sets' ids are the memo's setsKey).
func hostKey(b []byte, host model.HTTPHost, aids []string) []byte {
	b = keyInt(keyString(b, host.Name), int64(len(host.Rules)))
	for _, r := range host.Rules {
		b = keyString(keyString(keyString(b, r.PathType), r.Path), r.Method)
		aid := "-" // an action out of range: the rule is left out
		if r.Action >= 0 && r.Action < len(aids) {
			aid = aids[r.Action]
		}
		b = keyString(b, aid)
		for _, ms := range [][]model.HeaderMatch{r.Headers, r.Query} {
			b = keyInt(b, int64(len(ms)))
			for _, q := range ms {
				b = keyString(keyString(b, q.Name), q.Value)
			}
		}
	}
	return b
}

// placesUnnamed reports whether l places an entry named by no id (added
// each time l is, where an id's entries are added once).
func (l *lowered) placesUnnamed() bool {
	for _, pl := range l.places {
		if pl.id == "" {
			return true
		}
	}
	return false
}
