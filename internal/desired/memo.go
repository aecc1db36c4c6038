package desired

import (
	"net/netip"
	"slices"

	corev1 "k8s.io/api/core/v1"

	"github.com/haproxy-k8s-sync/haproxy-k8s-sync/internal/model"
	"github.com/haproxy-k8s-sync/haproxy-k8s-sync/internal/settings"
)

// Memo carries per-Service work from one Compute to the next, so that a pass
// after a small change redoes only the Services it touches. Compute gives
// the same Result with or without a Memo; the caller owns it and passes it
// in Input.Memo on every pass. It is not safe for concurrent use.
//
// It relies on informer semantics: an object that changes is replaced by a
// new one, never modified in place. An entry is keyed by the Service object
// and remembers the EndpointSlice objects it was computed from; it is
// reused only while the Service object is the same, its slices are the same
// objects and no node it depends on changed (its address, or its
// eligibility unless the Service's servers follow their nodes).
// Of a Service whose annotations are invalid only the message of its
// Problem is memoised (memoEntry.bad): a Service may carry thousands of
// bad annotations, and the object stays the same from pass to pass.
type Memo struct {
	opts    Options
	hasOpts bool
	pass    uint64
	nodes   map[string]nodeInfo // nodes with an address in the last pass
	entries map[*corev1.Service]*memoEntry

	services map[*corev1.Service]uint64 // Input.Services of the last pass, stamped by the pass that saw them last
	sorted   []candidate                // what Compute selected and sorted from them
	udp      []candidate                // udpCandidates(sorted)
	optIn    []Problem                  // badOptIns of the Services

	feOrder, beOrder sortCache // how the last frontends and backends were sorted

	good        map[string]*settings.Settings // Result.Good of the last pass
	goodAllMemo bool                          // every Service of that pass had a memoised entry
	goodCopy    bool                          // CopyGood: a delta copies good before it edits it
	frontends   []model.Frontend              // Result.Config.Frontends of the last pass
	feOwners    []*memoPort                   // parallel to frontends: the port whose fe is &frontends[i] (nil: none; repoint.go)
	frontDelta  *model.FrontendChanges        // servicesDelta's frontends, for its Result

	// The EndpointSlices grouped by Service, kept up to date from one pass
	// to the next by looking only at slices that came or went.
	sliceKeys map[*Slice]*sliceRef
	bySvc     map[string][]*Slice

	// For passes that change only servers (fast.go): the last Result, the
	// selected Services by key, and what changed since the last pass.
	last      lastResult
	byKey     map[string]*corev1.Service
	dirtyKeys map[string]struct{}                      // Services whose slices came or went
	dirtySvcs map[*corev1.Service]struct{}             // Services whose servers a node change forgot
	scratch   []string                                 // track's node list, reused
	sets      map[settings.Settings]*settings.Settings // the entries' settings objects (shared)
	addrs     map[string][]netip.Addr                  // Input.Addresses of the last pass

	// For passes that add or remove a few Services (delta.go): the
	// addresses and ports the configured frontends claim, by the
	// Service's key; deltas counts the passes servicesDelta took.
	claimed map[claim]string
	deltas  int
}

// candidates returns the selected and sorted Services of the last pass if
// svcs are the same objects (in any order).
func (m *Memo) candidates(svcs []*corev1.Service) ([]candidate, bool) {
	if m == nil || m.services == nil || len(svcs) != len(m.services) {
		return nil, false
	}
	for _, s := range svcs {
		if _, ok := m.services[s]; !ok {
			return nil, false
		}
	}
	return m.sorted, true
}

func (m *Memo) setCandidates(svcs []*corev1.Service, sorted []candidate) {
	if m == nil {
		return
	}
	m.services = make(map[*corev1.Service]uint64, len(svcs))
	for _, s := range svcs {
		m.services[s] = m.pass
	}
	if len(m.services) != len(svcs) {
		m.services = nil // duplicates: never reuse
	}
	m.sorted, m.udp = sorted, udpCandidates(sorted)
}

// udpCandidates is udpCandidates(svcs), from the memo when svcs are the
// candidates it holds (a pass over the same Services: no walk over them).
func (m *Memo) udpCandidates(svcs []candidate) []candidate {
	if m != nil && len(svcs) > 0 && len(svcs) == len(m.sorted) && &svcs[0] == &m.sorted[0] {
		return m.udp
	}
	return udpCandidates(svcs)
}

type memoEntry struct {
	svc    *corev1.Service
	key    string             // "namespace/name"
	pass   uint64             // last pass that saw the Service
	ready  bool               // set and ports hold results
	set    *settings.Settings // shared by the entries of equal settings (Memo.shared); never changed
	slices []*Slice
	ports  []memoPort // by index in Spec.Ports times len(fams), plus the family's index
	fams   []family   // the family of each frontend of a port (groupsOf)
	nodes  []string   // what the servers depend on ("": every node; nodesTouched)
	// tracked: nodes describes the servers held in ports.
	tracked bool
	// bad: the Service's annotations are invalid (never ready then).
	bad *badSettings
}

// badSettings is what a Service's invalid annotations make of its Problem.
type badSettings struct {
	msg, reason string
}

type memoPort struct {
	idx         int32 // index of the backend in the last Result (-1: not configured)
	haveServers bool
	servers     []model.Server
	ok          bool
	haveProxies bool
	// fe is the port's frontend: in the last Result's Frontends that had
	// it (an array never changed once made), not a copy of its own
	// (pointFrontends; issue 29). Set with haveProxies.
	fe *model.Frontend
	// be is the port's backend in the last Result that had it, with that
	// pass's servers: the very object, not a copy (the memo and the model
	// held every backend twice at 10,000 Services, issue 29). Shared,
	// never changed in place; set with haveProxies.
	be *model.Backend
}

// pointFrontends points each memo port's fe at its frontend in fes, the
// Result's sorted frontends: fes[i] was appended as order[i] (nil
// order: as i), by owners[order[i]] (nil: no memo port). It returns the
// ports by place in fes (the memo's feOwners).
func pointFrontends(fes []model.Frontend, order []int32, owners []*memoPort) []*memoPort {
	if owners == nil {
		return nil
	}
	out := make([]*memoPort, len(fes))
	for i := range fes {
		j := int32(i)
		if order != nil {
			j = order[i]
		}
		if mp := owners[j]; mp != nil {
			mp.fe = &fes[i]
			out[i] = mp
		}
	}
	return out
}

// backend is the port's backend with servers: the last one when its
// servers are the very same slice, else a copy with them, kept.
func (mp *memoPort) backend(servers []model.Server) *model.Backend {
	if !model.SameSlice(mp.be.Servers, servers) || (mp.be.Servers == nil) != (servers == nil) {
		mp.be = mp.be.WithServers(servers)
	}
	return mp.be
}

func sameOptions(a, b Options) bool {
	return a.Class == b.Class && a.ClassLess == b.ClassLess && a.Service == b.Service && a.Backend == b.Backend &&
		a.Targets == b.Targets && a.TrackNodes == b.TrackNodes && a.Defaults == b.Defaults && slices.Equal(a.Binds, b.Binds) &&
		a.NodeCheck == b.NodeCheck && a.LocalHealthCheck == b.LocalHealthCheck
}

// begin starts a pass: it forgets everything if the options changed, and
// the servers of the entries that depend on a node whose address changed
// (or that came or went) since the last pass, or whose eligibility changed
// (but for entries whose servers follow their nodes: see tracksNodes).
func (m *Memo) begin(opts Options, nodes map[string]nodeInfo) {
	if m == nil {
		return
	}
	var changed map[string]bool // address changed, or the node came or went
	var flipped map[string]bool // only eligibility changed
	if !m.hasOpts || !sameOptions(m.opts, opts) {
		m.opts, m.hasOpts = opts, true
		m.entries = nil
		m.nodes = nil
		m.services, m.sorted, m.udp = nil, nil, nil
		m.good, m.frontends, m.feOwners = nil, nil, nil
		m.last, m.byKey = lastResult{}, nil
		m.claimed = nil
		m.clearDirty()
	}
	if m.entries == nil {
		m.entries = make(map[*corev1.Service]*memoEntry)
	}
	m.pass++
	for name, a := range nodes {
		old, ok := m.nodes[name]
		switch {
		case !ok || old.addr != a.addr || old.addr6 != a.addr6:
			if changed == nil {
				changed = make(map[string]bool)
			}
			changed[name] = true
		case old.up != a.up:
			if flipped == nil {
				flipped = make(map[string]bool)
			}
			flipped[name] = true
		}
	}
	for name := range m.nodes {
		if _, ok := nodes[name]; !ok {
			if changed == nil {
				changed = make(map[string]bool)
			}
			changed[name] = true
		}
	}
	m.nodes = nodes
	// The servers of Services that follow their nodes do not depend on
	// the nodes' eligibility (tracksNodes): only the NodesBackend does.
	forget := func(e *memoEntry, onlyEligibility bool) {
		if !onlyEligibility || !e.tracksNodes(m.opts) {
			e.forgetServers()
			m.markEntryDirty(e)
		}
	}
	if len(changed) > 0 || len(flipped) > 0 {
		for _, e := range m.entries {
			switch nodesTouched(e.nodes, changed, flipped) {
			case touchedAddress:
				forget(e, false)
			case touchedEligibility:
				forget(e, true)
			}
		}
	}
}

// How a node change touches an entry's servers (nodesTouched).
const (
	touchedNone = iota
	touchedEligibility
	touchedAddress
)

// nodesTouched says how the nodes that changed (an address, or came or
// went) and flipped (only their eligibility) touch servers that depend
// on nodes ("": on every node; memoEntry.nodes). The entries are walked
// on a node's change instead of being indexed by node: an index of
// 10,000 Local Services with 5 endpoints each was ~1.5 MB the memo kept
// (issue 29's peak), for a walk of ~0.1 ms on the rare pass a node changes
// (BenchmarkComputeMemoNodes).
func nodesTouched(nodes []string, changed, flipped map[string]bool) int {
	t := touchedNone
	for _, n := range nodes {
		switch {
		case n == "" && len(changed) > 0, changed[n]:
			return touchedAddress
		case n == "" || flipped[n]:
			t = touchedEligibility
		}
	}
	return t
}

// end drops the entries of Services the pass did not see.
func (m *Memo) end() {
	if m == nil {
		return
	}
	for svc, e := range m.entries {
		if e.pass != m.pass {
			delete(m.entries, svc)
		}
	}
}

// entry returns the Service's entry, with its servers forgotten if they may
// have changed; nil without a Memo.
func (m *Memo) entry(svc *corev1.Service, key string, eps []*Slice) *memoEntry {
	if m == nil {
		return nil
	}
	e := m.entries[svc]
	if e == nil {
		e = &memoEntry{}
		m.entries[svc] = e
	}
	e.pass, e.svc, e.key = m.pass, svc, key
	if e.ready && !slices.Equal(e.slices, eps) {
		e.forgetServers()
	}
	e.slices = append(e.slices[:0], eps...)
	return e
}

// drop forgets a Service (its addresses changed).
func (m *Memo) drop(svc *corev1.Service) {
	if m == nil {
		return
	}
	if e := m.entries[svc]; e != nil {
		delete(m.entries, svc)
	}
}

// init makes e hold the results for settings set and the ports of e.svc,
// each with the frontends of groups (nil: one, of the Service's first
// family).
func (e *memoEntry) init(set *settings.Settings, ports int, groups []famGroup) {
	e.ready, e.set = true, set
	e.fams = e.fams[:0]
	for _, g := range groups {
		e.fams = append(e.fams, g.fam)
	}
	if len(e.fams) == 0 {
		e.fams = append(e.fams, firstFamily(e.svc))
	}
	e.ports = make([]memoPort, ports*len(e.fams))
}

// shared is set as the entries hold it: one object for equal settings
// (most Services have the same: not a copy of ~130 bytes in every entry,
// issue 29). The index holds at most maxSharedSets; when full it starts
// again (the entries keep their objects: equal values, some twice).
func (m *Memo) shared(set settings.Settings) *settings.Settings {
	if p := m.sets[set]; p != nil {
		return p
	}
	if m.sets == nil || len(m.sets) >= maxSharedSets {
		m.sets = make(map[settings.Settings]*settings.Settings)
	}
	p := new(settings.Settings) // not &set: set would be on the heap at every call
	*p = set
	m.sets[set] = p
	return p
}

// maxSharedSets bounds Memo.sets: settings that differ from Service to
// Service (a timeout each) are not worth sharing.
const maxSharedSets = 64

// tracksNodes reports whether every backend of e follows its nodes.
func (e *memoEntry) tracksNodes(opts Options) bool {
	for _, f := range e.fams {
		if !tracksNodes(e.svc, *e.set, opts, f) {
			return false
		}
	}
	return true
}
