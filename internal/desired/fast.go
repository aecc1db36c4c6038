package desired

import (
	"slices"
	"strings"

	corev1 "k8s.io/api/core/v1"

	"github.com/haproxy-k8s-sync/haproxy-k8s-sync/internal/model"
)

// lastResult is what a pass that changes only servers starts from: the
// parts of the last Result that depend on the Services alone.
type lastResult struct {
	valid      bool
	backends   []*model.Backend
	problems   []Problem
	configured []*corev1.Service
	selected   int
	nodesAt    int  // index of the model.NodesBackend in backends, or -1
	tracking   int  // backends that follow their nodes (TrackNodes)
	conflicts  bool // a Service lost a port conflict
}

// remember keeps res for the next pass; valid: every selected Service had
// valid annotations (and so a memo entry).
func (m *Memo) remember(res Result, svcs []candidate, valid bool) {
	if m == nil {
		return
	}
	m.last = lastResult{
		valid:      valid,
		backends:   res.Config.Backends,
		problems:   res.Problems,
		configured: res.Configured,
		selected:   res.Selected,
		nodesAt:    nodesIndex(res.Config.Backends),
		conflicts:  slices.ContainsFunc(res.Problems, func(p Problem) bool { return p.Reason == ReasonPortConflict }),
	}
	for _, b := range res.Config.Backends {
		if b.TrackNodes {
			m.last.tracking++
		}
	}
	if !m.last.valid {
		m.byKey = nil
		return
	}
	index := make(map[string]int32, len(res.Config.Backends))
	for i, b := range res.Config.Backends {
		index[b.Name] = int32(i)
	}
	m.byKey = make(map[string]*corev1.Service, len(svcs))
	for _, c := range svcs {
		m.byKey[c.key] = c.svc
		e := m.entries[c.svc]
		if e == nil || !e.ready { // cannot happen when valid; be safe
			m.last.valid, m.byKey = false, nil
			return
		}
		for i := range e.ports {
			mp := &e.ports[i]
			mp.idx = -1
			if !mp.haveProxies {
				continue
			}
			if j, ok := index[mp.be.Name]; ok {
				mp.idx = j
			}
		}
	}
}

// markDirty records that the servers of the Service with this key may
// have changed (its EndpointSlices came or went).
func (m *Memo) markDirty(key string) {
	if key == "" {
		return
	}
	if m.dirtyKeys == nil {
		m.dirtyKeys = make(map[string]struct{})
	}
	m.dirtyKeys[key] = struct{}{}
}

// markEntryDirty records that e's servers were forgotten (a node changed).
func (m *Memo) markEntryDirty(e *memoEntry) {
	if e.svc == nil {
		return
	}
	if m.dirtySvcs == nil {
		m.dirtySvcs = make(map[*corev1.Service]struct{})
	}
	m.dirtySvcs[e.svc] = struct{}{}
}

func (m *Memo) clearDirty() {
	if m != nil {
		m.dirtyKeys = clearedSet(m.dirtyKeys)
		m.dirtySvcs = clearedSet(m.dirtySvcs)
	}
}

// maxKeptDirty is the most entries a dirty set may have had for its map
// to be kept, cleared, for the next pass.
const maxKeptDirty = 256

// clearedSet is s emptied for the next pass: cleared in place when it
// was small, dropped when it was large. clear keeps a map's room, and
// the first pass marks every Service dirty: at 10,000 Services the
// empty set kept ~1.5 MB for good (issue 29). A pass that marks many
// makes a new one.
func clearedSet[K comparable](s map[K]struct{}) map[K]struct{} {
	if len(s) > maxKeptDirty {
		return nil
	}
	clear(s)
	return s
}

// serversOnly is the pass for a world whose Services are the objects of
// the last pass, all of them with valid annotations: the frontends, the
// backends but for their servers, Good, Problems and Configured are the
// last pass's. Only the servers of the Services whose slices or nodes
// changed are recomputed; the Backends array (of pointers) is copied only
// if one of them changed, with a new Backend for each changed one, and
// Config.Changes lists them. It reports false when the last
// pass cannot serve as the base.
func (m *Memo) serversOnly(opts Options, bySvc map[string][]*Slice) (Result, bool) {
	if m == nil || !m.last.valid || m.good == nil {
		return Result{}, false
	}
	for k := range m.dirtyKeys {
		if svc := m.byKey[k]; svc != nil {
			if e := m.entries[svc]; e != nil {
				e.svc = svc
				m.markEntryDirty(e)
			}
		}
	}
	base := m.last.backends
	backends := base
	var changed []int
	for svc := range m.dirtySvcs {
		if e := m.entries[svc]; e == nil || !e.ready {
			return Result{}, false // cannot happen while last.valid; be safe
		}
		k := m.entries[svc].key
		eps := bySvc[k]
		e := m.entry(svc, k, eps)
		for x := range e.ports {
			i, fam := x/len(e.fams), e.fams[x%len(e.fams)]
			p, mp := svc.Spec.Ports[i], &e.ports[x]
			j := mp.idx
			if j < 0 || !mp.haveProxies {
				continue // not configured in the last pass
			}
			if int(j) >= len(backends) || backends[j].Name != mp.be.Name {
				// Moved by Services added or removed (delta.go).
				k, found := slices.BinarySearchFunc(backends, mp.be.Name, func(b *model.Backend, n string) int { return strings.Compare(b.Name, n) })
				if !found {
					continue
				}
				j, mp.idx = int32(k), int32(k)
			}
			if !mp.haveServers {
				servers, ok := serversFor(svc, p, *e.set, opts, m.nodes, eps, fam)
				if !e.tracked {
					m.track(e, svc, eps)
					e.tracked = true
				}
				mp.haveServers, mp.servers, mp.ok = true, servers, ok
			}
			if model.SameSlice(mp.servers, backends[j].Servers) {
				continue
			}
			if len(changed) == 0 {
				backends = slices.Clone(base) // pointers: the backends stay shared
			}
			backends[j] = backends[j].WithServers(mp.servers) // shared: never changed in place
			mp.be = backends[j]
			changed = append(changed, int(j))
		}
	}
	if i, last, ok := m.lastNodes(); ok {
		if nb := nodesBackend(m.nodes, last, opts.NodeCheck); !model.SameSlice(nb.Servers, last) {
			if len(changed) == 0 {
				backends = slices.Clone(base)
			}
			backends[i] = backends[i].WithServers(nb.Servers)
			changed = append(changed, i)
		}
	}
	m.clearDirty()
	res := Result{
		Config:      model.Config{Frontends: m.frontends, Backends: backends},
		Good:        m.good,
		Problems:    m.last.problems,
		Selected:    m.last.selected,
		Configured:  m.last.configured,
		ServersOnly: true,
	}
	// Changes is set even when no server changed (a Node created not
	// Ready and without an address, as kubelet's registration writes it,
	// before its status): an empty list is "the last pass's Config",
	// which a driver applies at no cost, where nil is a whole pass: with
	// the pool, its view, placement and pool.json at 10,000 Services,
	// ~30-50 ms that the node's next write (its status) waited for
	// (issue 29's churn, "node added" p50 39.5 against 7.2 ms per port).
	slices.Sort(changed)
	res.Config.Changes = &model.Changes{Base: base, Backends: changed}
	m.last.backends = backends
	return res, true
}

// withNodes adds the model.NodesBackend to the sorted backends when one of
// them tracks nodes. It reuses the servers of the memo's last one when
// they are the same.
func withNodes(backends []*model.Backend, nodes map[string]nodeInfo, check model.Check, m *Memo) []*model.Backend {
	if !slices.ContainsFunc(backends, func(b *model.Backend) bool { return b.TrackNodes }) {
		return backends
	}
	_, last, _ := m.lastNodes()
	i, _ := nodesSearch(backends)
	nb := nodesBackend(nodes, last, check)
	return slices.Insert(backends, i, &nb)
}

// lastNodes is the index and the servers of the model.NodesBackend in the
// last Result; ok is false when it had none.
func (m *Memo) lastNodes() (i int, servers []model.Server, ok bool) {
	if m == nil {
		return -1, nil, false
	}
	i = m.last.nodesAt
	if i < 0 || i >= len(m.last.backends) || m.last.backends[i].Name != model.NodesBackend {
		return -1, nil, false
	}
	return i, m.last.backends[i].Servers, true
}

// nodesIndex is the index of the model.NodesBackend in backends, or -1.
func nodesIndex(backends []*model.Backend) int {
	if i, ok := nodesSearch(backends); ok {
		return i
	}
	return -1
}

// nodesSearch finds where the model.NodesBackend is, or goes, in the
// backends sorted by name.
func nodesSearch(backends []*model.Backend) (int, bool) {
	return slices.BinarySearchFunc(backends, model.NodesBackend, func(b *model.Backend, n string) int { return strings.Compare(b.Name, n) })
}
