package desired

import (
	"cmp"
	"maps"
	"net/netip"
	"slices"
	"strings"

	corev1 "k8s.io/api/core/v1"

	"github.com/haproxy-k8s-sync/haproxy-k8s-sync/internal/model"
	"github.com/haproxy-k8s-sync/haproxy-k8s-sync/internal/settings"
)

// maxServicesDelta is the most Services a pass may add and remove for
// servicesDelta to take it; more make a whole pass.
const maxServicesDelta = 64

// servicesDelta brings the memo's last pass up to the Services of this
// one when they differ from it by a few Services added or removed (a new
// Service object, a deleted one, one written again), so that serversOnly
// can serve the pass: at 10,000 Services a new Service object cost a
// whole pass, 100-350 ms (issue 29). The Services kept keep their
// results: it refuses (false, the memo unchanged) unless nothing an
// added or removed Service does reaches another one, which is then
// exactly what a whole pass would compute:
//   - every selected Service of the last pass had valid annotations (its
//     memo entry served it), and, if a Service goes, none lost a port
//     conflict (a Service going may free a port for another);
//   - no Service added or removed has a Problem (a removed one had none
//     in the last pass) or a UDP port;
//   - an added Service claims no address and port another holds;
//   - the model.NodesBackend stays, or stays away.
//
// The lists the last pass sorted (candidates, Configured, frontends,
// backends) are spliced, not sorted again; the Services kept are not
// looked at but for a lookup each.
func (m *Memo) servicesDelta(svcs []*corev1.Service, opts Options, nodes map[string]nodeInfo,
	bySvc map[string][]*Slice, addrs map[string][]netip.Addr) bool {
	if m == nil || m.services == nil || !m.last.valid || m.good == nil || m.byKey == nil || m.claimed == nil {
		return false
	}
	added, removed, ok := m.servicesChanged(svcs)
	if !ok {
		return false
	}
	var d delta
	if !d.remove(m, removed) || !d.add(m, added, opts, nodes, bySvc, addrs) {
		return false
	}
	tracking := m.last.tracking + d.tracking
	if (tracking > 0) != (m.last.tracking > 0) {
		return false // the model.NodesBackend would come or go
	}
	sorted, ok1 := spliced(m.sorted, d.dropC, d.addC, byAge, func(a, b candidate) bool { return a.svc == b.svc })
	configured, ok2 := spliced(m.last.configured, d.dropConf, d.addConf, func(a, b *corev1.Service) int {
		return byAge(candidate{a, key(a)}, candidate{b, key(b)})
	}, func(a, b *corev1.Service) bool { return a == b })
	frontends, ok3 := spliced(m.frontends, d.dropFe, d.addFe, func(a, b model.Frontend) int { return strings.Compare(a.Name, b.Name) },
		func(a, b model.Frontend) bool { return a.Name == b.Name })
	backends, ok4 := spliced(m.last.backends, d.dropBe, d.addBe, func(a, b *model.Backend) int { return strings.Compare(a.Name, b.Name) },
		func(a, b *model.Backend) bool { return a.Name == b.Name })
	if !ok1 || !ok2 || !ok3 || !ok4 {
		return false
	}
	// What may no longer fail is done: the memo takes the change. Good
	// is edited in place (Result.GoodEdited) unless a reader holds it
	// (CopyGood).
	good := m.good
	if m.goodCopy {
		good = maps.Clone(m.good)
	}
	for _, s := range removed {
		delete(m.services, s)
		delete(m.dirtySvcs, s)
		e := m.entries[s]
		if e == nil {
			continue // not selected
		}
		for _, c := range d.freed[s] {
			if m.claimed[c] == e.key {
				delete(m.claimed, c)
			}
		}
		delete(m.entries, s)
		delete(m.byKey, e.key)
		delete(good, e.key)
	}
	for _, a := range d.adds {
		m.services[a.c.svc] = m.pass
		e := m.entry(a.c.svc, a.c.key, a.eps)
		e.init(m.shared(a.set), len(a.c.svc.Spec.Ports), a.groups)
		copy(e.ports, a.ports)
		if a.groups != nil { // servers computed: tracked as a whole pass does
			m.track(e, a.c.svc, a.eps)
			e.tracked = true
		}
		m.byKey[a.c.key] = a.c.svc
		good[a.c.key] = e.set // the shared object init gave it
		for _, c := range a.claims {
			m.claimed[c] = a.c.key
		}
	}
	for _, s := range d.quiet {
		m.services[s] = m.pass
	}
	if len(backends) == 0 { // as a whole pass leaves them
		frontends, backends = nil, nil
	}
	m.frontDelta = &model.FrontendChanges{Base: m.frontends, Of: frontends, Names: d.frontNames()}
	if !model.SameSlice(frontends, m.frontends) {
		m.feOwners = repoint(m.frontends, frontends, m.feOwners, d.dropFe, m.addedPorts(d.adds))
	}
	m.sorted, m.good, m.frontends = sorted, good, frontends
	m.last.backends, m.last.configured = backends, configured
	m.last.selected += len(d.addC) - len(d.dropC)
	m.last.nodesAt, m.last.tracking = nodesIndex(backends), tracking
	m.deltas++
	return true
}

// CopyGood makes the passes that follow copy the last pass's Good before
// a delta changes it (yes), or edit it in place (no, the default;
// Result.GoodEdited): a caller reading the last Good on another goroutine
// asks for copies while it reads.
func (m *Memo) CopyGood(yes bool) {
	if m != nil {
		m.goodCopy = yes
	}
}

// servicesChanged is which of svcs the last pass did not have, and which
// it had that svcs lack; ok is false when there are too many, or svcs
// holds one twice. It stamps m.services with this pass.
func (m *Memo) servicesChanged(svcs []*corev1.Service) (added, removed []*corev1.Service, ok bool) {
	kept := 0
	for _, s := range svcs {
		stamp, had := m.services[s]
		switch {
		case had && stamp == m.pass:
			return nil, nil, false // twice
		case had:
			m.services[s] = m.pass
			kept++
		case slices.Contains(added, s):
			return nil, nil, false
		default:
			if added = append(added, s); len(added) > maxServicesDelta {
				return nil, nil, false
			}
		}
	}
	if kept < len(m.services) {
		if len(m.services)-kept+len(added) > maxServicesDelta {
			return nil, nil, false
		}
		for s, stamp := range m.services {
			if stamp != m.pass {
				removed = append(removed, s)
			}
		}
	}
	return added, removed, true
}

// delta is what the Services added and removed change, found before
// anything changes.
type delta struct {
	dropC, addC       []candidate
	dropConf, addConf []*corev1.Service
	dropFe, addFe     []model.Frontend
	dropBe, addBe     []*model.Backend
	freed             map[*corev1.Service][]claim
	gone              map[string]bool // the removed Services' keys
	adds              []deltaAdd
	quiet             []*corev1.Service // added, not selected, nothing to report
	tracking          int               // backends that follow their nodes, added less removed
}

// deltaAdd is an added Service's memo entry, made ready.
type deltaAdd struct {
	c      candidate
	set    settings.Settings
	eps    []*Slice
	groups []famGroup // of its first TCP port; nil: none configured
	ports  []memoPort
	claims []claim
}

func (d *delta) remove(m *Memo, removed []*corev1.Service) bool {
	if len(removed) > 0 && m.last.conflicts {
		return false
	}
	d.gone = make(map[string]bool, len(removed))
	for _, s := range removed {
		if hasUDP(s) || slices.ContainsFunc(m.last.problems, func(p Problem) bool { return p.Service == s }) {
			return false
		}
		e := m.entries[s]
		if e == nil {
			if selected(s, m.opts) {
				return false // cannot happen while last.valid; be safe
			}
			continue
		}
		if !e.ready {
			return false
		}
		d.gone[e.key] = true
		d.dropC = append(d.dropC, candidate{s, e.key})
		configured := false
		for x := range e.ports {
			mp := &e.ports[x]
			if !mp.haveProxies || mp.idx < 0 {
				continue // not configured in the last pass
			}
			configured = true
			d.dropFe = append(d.dropFe, *mp.fe)
			d.dropBe = append(d.dropBe, mp.be)
			if mp.be.TrackNodes {
				d.tracking--
			}
			for _, b := range mp.fe.Binds {
				if d.freed == nil {
					d.freed = make(map[*corev1.Service][]claim)
				}
				d.freed[s] = append(d.freed[s], claim{b.Addr, int32(b.Port)})
			}
		}
		if configured {
			d.dropConf = append(d.dropConf, s)
		}
	}
	return true
}

func (d *delta) add(m *Memo, added []*corev1.Service, opts Options, nodes map[string]nodeInfo,
	bySvc map[string][]*Slice, addrs map[string][]netip.Addr) bool {
	var claimed map[claim]bool // by the added Services
	for _, s := range added {
		if hasUDP(s) {
			return false
		}
		if !selected(s, opts) {
			if len(badOptIns([]*corev1.Service{s}, opts)) > 0 {
				return false
			}
			d.quiet = append(d.quiet, s)
			continue
		}
		if len(invalidService(s)) > 0 {
			return false
		}
		set, errs := serviceSettings(opts.Defaults, s)
		if len(errs) > 0 {
			return false
		}
		k := key(s)
		a := deltaAdd{c: candidate{s, k}, set: set, eps: bySvc[k]}
		d.addC = append(d.addC, a.c)
		if pooled(s, opts) && len(addrs[k]) == 0 {
			d.adds = append(d.adds, a) // no address (yet): taken, not configured
			continue
		}
		nf := 0
		for i, p := range s.Spec.Ports {
			if p.Protocol != "" && p.Protocol != corev1.ProtocolTCP {
				return false
			}
			groups := groupsOf(s, bindsFor(s, p.Port, addrs[k], opts))
			if nf == 0 {
				nf, a.groups = len(groups), groups
				a.ports = make([]memoPort, len(s.Spec.Ports)*nf)
			}
			for g, grp := range groups {
				for _, b := range grp.binds {
					c := claim{b.Addr, int32(b.Port)}
					if o, ok := m.claimed[c]; (ok && !d.gone[o]) || claimed[c] {
						return false // a port conflict
					}
					if claimed == nil {
						claimed = make(map[claim]bool)
					}
					claimed[c] = true
					a.claims = append(a.claims, c)
				}
				servers, ok := serversFor(s, p, set, opts, nodes, a.eps, grp.fam)
				if !ok {
					return false // no nodePort
				}
				fe, be := proxies(s, k, p, set, opts, len(s.Spec.Ports) > 1, grp)
				if len(listenerProblem(s, fe, opts)) > 0 {
					return false
				}
				be.Servers = servers
				kept := be
				// idx 0: configured, found by name (serversOnly).
				// fe: its own copy until the splice moves it into the new
				// array (repoint).
				feKept := fe
				a.ports[i*nf+g] = memoPort{haveServers: true, servers: servers, ok: true, haveProxies: true, fe: &feKept, be: &kept}
				d.addFe = append(d.addFe, fe)
				d.addBe = append(d.addBe, &kept)
				if kept.TrackNodes {
					d.tracking++
				}
			}
		}
		if nf > 0 {
			d.addConf = append(d.addConf, s)
		}
		d.adds = append(d.adds, a)
	}
	return true
}

// frontNames is the names of the frontends the delta adds and drops,
// sorted, each once (model.FrontendChanges.Names).
func (d *delta) frontNames() []string {
	names := make([]string, 0, len(d.dropFe)+len(d.addFe))
	for _, f := range d.dropFe {
		names = append(names, f.Name)
	}
	for _, f := range d.addFe {
		names = append(names, f.Name)
	}
	slices.Sort(names)
	return slices.Compact(names)
}

// byAge is the order of the candidates: earlier Services win port
// conflicts.
func byAge(a, b candidate) int {
	if c := a.svc.CreationTimestamp.Time.Compare(b.svc.CreationTimestamp.Time); c != 0 {
		return c
	}
	return cmp.Compare(a.key, b.key)
}

func hasUDP(s *corev1.Service) bool { return slices.ContainsFunc(s.Spec.Ports, isUDP) }

// spliced is old, sorted by order, without drop and with add merged in, as
// a new slice (nil when empty); ok is false when an element of drop is
// not in old (same) or one of add is in order's place of another. Each
// place is found by binary search: order runs O(log n) times an element.
func spliced[T any](old, drop, add []T, order func(a, b T) int, same func(a, b T) bool) ([]T, bool) {
	if len(drop) == 0 && len(add) == 0 {
		return old, true
	}
	// cut[i]: before old[at], either drop old[at] or put add's element.
	type cut struct {
		at   int
		drop bool
		x    T
	}
	cuts := make([]cut, 0, len(drop)+len(add))
	for _, x := range drop {
		i, found := slices.BinarySearchFunc(old, x, order)
		if !found || !same(old[i], x) {
			return nil, false
		}
		cuts = append(cuts, cut{at: i, drop: true})
	}
	for _, x := range add {
		i, found := slices.BinarySearchFunc(old, x, order)
		if found && !slices.ContainsFunc(cuts[:len(drop)], func(c cut) bool { return c.at == i }) {
			return nil, false // in the place of one kept
		}
		cuts = append(cuts, cut{at: i, x: x})
	}
	// By place; at one place the adds in order, then the drop.
	slices.SortStableFunc(cuts, func(a, b cut) int {
		if c := cmp.Compare(a.at, b.at); c != 0 {
			return c
		}
		switch {
		case a.drop && b.drop:
			return 0
		case a.drop:
			return 1
		case b.drop:
			return -1
		}
		return order(a.x, b.x)
	})
	for i := 1; i < len(cuts); i++ {
		a, b := cuts[i-1], cuts[i]
		if a.at == b.at && (a.drop && b.drop || !a.drop && !b.drop && order(a.x, b.x) == 0) {
			return nil, false // dropped twice, or added twice
		}
	}
	n := len(old) + len(add) - len(drop)
	if n == 0 {
		return nil, true
	}
	out := make([]T, 0, n)
	from := 0
	for _, c := range cuts {
		out = append(out, old[from:c.at]...)
		from = c.at
		if c.drop {
			from++
		} else {
			out = append(out, c.x)
		}
	}
	return append(out, old[from:]...), true
}
