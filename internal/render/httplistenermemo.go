package render

import (
	"slices"

	"github.com/haproxy-k8s-sync/haproxy-k8s-sync/internal/model"
)

// HTTPListenerMemo gives HTTPListenerView pass after pass, building again
// only the listened frontends that changed (issue 29): a pass in which no
// listened frontend changed gives the last view's fixed frontend itself
// (its table the very same *model.HTTP, so the HTTP maps' memo takes it
// by identity, httpident.go), and one in which some did reuses every
// other frontend's part of the table (its hosts named "KEY|host", their
// rules numbered after the actions before it) when it still has the same
// place in the actions and keeps the same keys, its names when only its
// place moved. A frontend is the same as in the last call when its name,
// table (the very pointer: a model's table is never changed once made)
// and binds (the very slice) are. The result is HTTPListenerView's,
// frontend for frontend. The zero value is ready; not safe for
// concurrent use; what it returns is shared with the next calls' results
// and must not be changed.
type HTTPListenerMemo struct {
	o     Options
	ok    bool
	segs  []listenedPart  // the last view's listened frontends, in cfg's order
	fixed model.Frontend  // the last view's fixed frontend
	at    map[string]int  // a name's place in segs (kept between calls, cleared)
	seen  map[string]bool // the keys taken so far (kept between calls, cleared)
	// Redone counts the listened frontends whose part the last call
	// built again (tests and benchmarks).
	Redone int
}

// listenedPart is one listened frontend's part of the fixed frontend.
type listenedPart struct {
	name  string
	http  *model.HTTP
	binds []model.Bind     // the frontend's, by identity
	keys  []string         // ListenerKey of each bind
	kept  []int            // the binds whose key it keeps (no earlier frontend has it)
	base  int              // the actions before its own in the fixed table
	hosts []model.HTTPHost // its hosts under each kept key, rules after base
}

// same reports whether f is the frontend p was made of.
func (p *listenedPart) same(f *model.Frontend) bool {
	return p.name == f.Name && p.http == f.HTTP && model.SameSlice(p.binds, f.Binds)
}

// View is HTTPListenerView(cfg, o).
func (m *HTTPListenerMemo) View(cfg model.Config, o Options) model.Config {
	if !o.HTTPListener() {
		*m = HTTPListenerMemo{}
		return cfg
	}
	if !m.ok || m.o != o {
		*m = HTTPListenerMemo{o: o, ok: true}
	}
	m.Redone = 0
	first, n, same := -1, 0, true
	for i := range cfg.Frontends {
		if !o.HTTPListened(cfg.Frontends[i]) {
			continue
		}
		if first < 0 {
			first = i
		}
		if n >= len(m.segs) || !m.segs[n].same(&cfg.Frontends[i]) {
			same = false
		}
		n++
	}
	if !same || n != len(m.segs) || m.fixed.HTTP == nil {
		m.rebuild(cfg, o, n)
	}
	if first < 0 {
		cfg.Frontends = append(slices.Clip(cfg.Frontends), m.fixed)
		return cfg
	}
	out := make([]model.Frontend, 0, len(cfg.Frontends)-n+1)
	for i, f := range cfg.Frontends {
		switch {
		case i == first:
			out = append(out, m.fixed)
		case !o.HTTPListened(f):
			out = append(out, f)
		}
	}
	cfg.Frontends = out
	return cfg
}

// rebuild makes the fixed frontend of cfg's n listened frontends, each
// one's part taken from the last call's when it can be.
func (m *HTTPListenerMemo) rebuild(cfg model.Config, o Options, n int) {
	if m.at == nil {
		m.at, m.seen = map[string]int{}, map[string]bool{}
	}
	clear(m.at)
	clear(m.seen)
	for j, p := range m.segs {
		m.at[p.name] = j
	}
	segs := make([]listenedPart, 0, n)
	fixed := model.Frontend{Name: HTTPListenerFrontend, HTTP: &model.HTTP{}}
	h := fixed.HTTP
	// At size (append's growth by a quarter made ~5 times the table's
	// bytes at 1,000 Gateways): at most each host under each bind.
	var hosts, actions, binds int
	for i := range cfg.Frontends {
		if f := &cfg.Frontends[i]; o.HTTPListened(*f) {
			hosts, actions, binds = hosts+len(f.Binds)*len(f.HTTP.Hosts), actions+len(f.HTTP.Actions), binds+len(f.Binds)
		}
	}
	fixed.Binds, h.Hosts, h.Actions = sized[model.Bind](binds), sized[model.HTTPHost](hosts), sized[model.HTTPAction](actions)
	for i := range cfg.Frontends {
		f := &cfg.Frontends[i]
		if !o.HTTPListened(*f) {
			continue
		}
		var old *listenedPart
		if j, ok := m.at[f.Name]; ok && m.segs[j].same(f) {
			old = &m.segs[j]
		}
		p := m.partOf(f, old, len(h.Actions))
		for _, b := range p.kept {
			fixed.Binds = append(fixed.Binds, f.Binds[b])
		}
		h.Hosts = append(h.Hosts, p.hosts...)
		h.Actions = append(h.Actions, f.HTTP.Actions...)
		segs = append(segs, p)
	}
	model.Shaped(h)
	m.segs, m.fixed = segs, fixed
}

// partOf is f's part with its actions after base, old's (the same
// frontend's in the last call, nil: none) when it can be.
func (m *HTTPListenerMemo) partOf(f *model.Frontend, old *listenedPart, base int) listenedPart {
	p := listenedPart{name: f.Name, http: f.HTTP, binds: f.Binds, base: base}
	if old != nil {
		p.keys = old.keys
	} else {
		p.keys = make([]string, len(f.Binds))
		for i, b := range f.Binds {
			p.keys[i] = ListenerKey(b.Addr, b.Port)
		}
	}
	for i, k := range p.keys {
		if !m.seen[k] {
			m.seen[k] = true
			p.kept = append(p.kept, i)
		}
	}
	switch {
	case old != nil && slices.Equal(old.kept, p.kept) && old.base == base:
		p.kept = old.kept
		p.hosts = old.hosts
		return p
	case old != nil && slices.Equal(old.kept, p.kept):
		p.kept = old.kept
		p.hosts = make([]model.HTTPHost, len(old.hosts))
		for i, host := range old.hosts {
			p.hosts[i] = model.HTTPHost{Name: host.Name, Rules: renumbered(host.Rules, base-old.base)}
		}
	default:
		p.hosts = make([]model.HTTPHost, 0, len(p.kept)*len(f.HTTP.Hosts))
		for _, b := range p.kept {
			for _, host := range f.HTTP.Hosts {
				p.hosts = append(p.hosts, model.HTTPHost{Name: p.keys[b] + listenerHostSep + host.Name, Rules: renumbered(host.Rules, base)})
			}
		}
	}
	m.Redone++
	return p
}

// renumbered is rules with each action moved by d, in a new slice.
func renumbered(rules []model.HTTPRule, d int) []model.HTTPRule {
	out := make([]model.HTTPRule, len(rules))
	for i, r := range rules {
		r.Action += d
		out[i] = r
	}
	return out
}

// sized is an empty slice with room for n, nil for none (as append to
// nil leaves it).
func sized[T any](n int) []T {
	if n == 0 {
		return nil
	}
	return make([]T, 0, n)
}
