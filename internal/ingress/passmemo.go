package ingress

import (
	"bytes"
	"maps"
	"slices"

	corev1 "k8s.io/api/core/v1"
	netv1 "k8s.io/api/networking/v1"

	"github.com/haproxy-k8s-sync/haproxy-k8s-sync/internal/certs"
	"github.com/haproxy-k8s-sync/haproxy-k8s-sync/internal/desired"
	"github.com/haproxy-k8s-sync/haproxy-k8s-sync/internal/model"
)

// The pass memo (issue 33): a pass whose input differs from the last
// pass's only in a few Ingresses, each of them simple before and after
// (one backend per path, on hosts of its own: see simple), is the last
// pass's Result patched. Those Ingresses are compiled (through the unit
// memo); the hosts their paths name, old and new, are built again
// (tables.host); every other host keeps its rules, their actions moved
// to their new places (patchTable); the backends follow the paths that
// use them (counted). The rest of the Result (Events, annotation
// counts, the HTTPS frontend's certificates) is the last pass's: a
// simple Ingress tells nothing and reads no Secret. Anything else (a
// Service, EndpointSlice, IngressClass or Secret not the last pass's
// object, an Option, more than maxPatch Ingresses, an Ingress that is
// not simple, or a last pass with a canary, a redirected or aliased
// host, or a refused Ingress) is a whole pass, which the next one can
// patch again. The result is the whole pass's
// (TestPassMemoIsTheWholeCompile).

// maxPatch is the most Ingresses a patched pass changes.
const maxPatch = 16

// passState is what the last pass was made of.
type passState struct {
	in       Input
	opts     Options
	ours     func(*netv1.Ingress) bool
	svcs     map[*corev1.Service]struct{}
	slices   map[*desired.Slice]struct{}
	w        *world                      // its Service and EndpointSlice indexes
	objs     map[Key]*netv1.Ingress      // every Ingress of the input, ours or not
	ptrs     map[*netv1.Ingress]struct{} // the same objects (a pointer hashes faster than a Key)
	units    map[Key]*unit               // the served Ingresses
	tb       *tables
	refs     map[string]int // per backend, the paths using it
	backends map[string]*model.Backend
	res      Result
}

// simple reports whether u may change in a patched pass: what it makes
// is its own hosts' rules and the backends they name, and nothing else.
func simple(u *unit) bool {
	s := &u.set
	if s.canary.on || s.wwwRedirect || len(s.aliases) > 0 || len(s.redirectFrom) > 0 || u.fallback != "" ||
		len(u.tls) > 0 || u.client != nil || u.pass != nil || s.auth.basic || s.btls.on ||
		(s.access.ext != nil && s.access.ext.Backend != "") { // a backend no path names (extauth.go)
		return false
	}
	return !slices.ContainsFunc(u.paths, func(p path) bool {
		return p.host == model.AnyHost || p.alias || p.weights != nil || len(p.headers) > 0 || p.backend == model.RejectBackend
	})
}

// record keeps a whole pass for the next one to patch (forgets the last
// when this one cannot be patched).
func (m *Memo) record(in Input, opts Options, ours func(*netv1.Ingress) bool, units []*unit, refused bool, tb *tables, w *world, res Result) {
	if m == nil {
		return
	}
	m.pass, m.unrecorded = nil, "a refused Ingress, none served or a www redirect"
	if refused || len(units) == 0 || len(res.Frontends) == 0 || len(tb.www) > 0 {
		return
	}
	m.unrecorded = "a canary, redirected or aliased host"
	p := &passState{in: in, opts: opts, ours: ours, w: w, tb: tb, res: res,
		svcs: make(map[*corev1.Service]struct{}, len(in.Services)), slices: make(map[*desired.Slice]struct{}, len(in.Slices)),
		objs: make(map[Key]*netv1.Ingress, len(in.Ingresses)), ptrs: make(map[*netv1.Ingress]struct{}, len(in.Ingresses)), units: make(map[Key]*unit, len(units)),
		refs: map[string]int{}, backends: maps.Clone(w.backends)}
	p.opts.Last = nil
	for _, u := range units {
		s := &u.set
		if s.canary.on || s.wwwRedirect || len(s.aliases) > 0 || len(s.redirectFrom) > 0 {
			return
		}
		p.units[u.key] = u
		p.count(u, 1)
		if u.fallback != "" {
			p.refs[u.fallback]++
		}
	}
	if len(p.refs) != len(p.backends) || slices.ContainsFunc(slices.Collect(maps.Keys(p.refs)), func(n string) bool { return p.backends[n] == nil }) {
		m.unrecorded = "a backend no served path uses"
		return // made by a refused version, say
	}
	for _, s := range in.Services {
		p.svcs[s] = struct{}{}
	}
	for _, s := range in.Slices {
		p.slices[s] = struct{}{}
	}
	for _, ing := range in.Ingresses {
		p.objs[Key{ing.Namespace, ing.Name}] = ing
		p.ptrs[ing] = struct{}{}
	}
	m.pass, m.unrecorded = p, ""
}

// count adds n to the uses of u's paths' backends.
func (p *passState) count(u *unit, n int) {
	for _, x := range u.paths {
		for _, b := range x.weights {
			p.refs[b.Name] += n
		}
		if x.weights == nil {
			p.refs[x.backend] += n
		}
	}
}

// sameWorld is "" when in and opts are the last pass's but for the
// Ingresses, else what differs.
func (p *passState) sameWorld(in Input, opts Options) string {
	o := opts
	o.Last = nil
	switch {
	case o.Class != p.opts.Class || o.HTTPPort != p.opts.HTTPPort || o.HTTPSPort != p.opts.HTTPSPort ||
		o.DefaultCert != p.opts.DefaultCert || o.ConnectPerRequest != p.opts.ConnectPerRequest || o.Own != p.opts.Own || !slices.Equal(o.Addresses, p.opts.Addresses):
		return "other options"
	case !samePtrs(in.Classes, p.in.Classes):
		return "other IngressClasses"
	case !inSet(in.Services, p.svcs):
		return "other Services"
	case !inSet(in.Slices, p.slices):
		return "other EndpointSlices"
	}
	eqPtr := func(a, b *certs.Bundle) bool { return a == b }
	switch {
	case !maps.EqualFunc(in.Certs, p.in.Certs, eqPtr) || !maps.Equal(in.Problems, p.in.Problems):
		return "other certificates"
	case !maps.EqualFunc(in.Auth, p.in.Auth, bytes.Equal) || !maps.EqualFunc(in.CAs, p.in.CAs, bytes.Equal) ||
		!maps.Equal(in.CAProblems, p.in.CAProblems):
		return "other auth or CA Secrets"
	case !maps.Equal(in.ConfigMaps, p.in.ConfigMaps):
		return "other ConfigMaps"
	}
	return ""
}

func samePtrs[T any](a, b []*T) bool {
	return len(a) == len(b) && !slices.ContainsFunc(a, func(x *T) bool { return !slices.Contains(b, x) })
}

// inSet reports whether xs are the objects of set (in any order).
func inSet[T any](xs []*T, set map[*T]struct{}) bool {
	if len(xs) != len(set) {
		return false
	}
	for _, x := range xs {
		if _, ok := set[x]; !ok {
			return false
		}
	}
	return true
}

// patch is Compile from the last pass, when it may be (ok false: a
// whole pass is needed; the last pass's state is dropped when it may no
// longer be right).
func (m *Memo) patch(in Input, opts Options) (Result, bool) {
	if m == nil || m.pass == nil {
		if m != nil && m.unrecorded != "" {
			return m.whole("last pass not kept: " + m.unrecorded)
		}
		return m.whole("no last pass")
	}
	p := m.pass
	if why := p.sameWorld(in, opts); why != "" {
		return m.whole(why)
	}
	changed := map[Key]*netv1.Ingress{} // nil: gone
	var restated []*netv1.Ingress       // new objects that compile as the last (a status written)
	seen := 0                           // the objects of the last pass, and their keys
	for _, ing := range in.Ingresses {
		if _, ok := p.ptrs[ing]; ok {
			seen++
			continue
		}
		k := Key{ing.Namespace, ing.Name}
		if o := p.objs[k]; o != nil {
			seen++
			if sameCompiled(o, ing) {
				restated = append(restated, ing)
				continue
			}
		}
		if changed[k] = ing; len(changed) > maxPatch {
			return m.whole("too many Ingresses changed")
		}
	}
	if seen < len(p.objs) {
		now := make(map[Key]bool, len(in.Ingresses))
		for _, ing := range in.Ingresses {
			now[Key{ing.Namespace, ing.Name}] = true
		}
		for k := range p.objs {
			if !now[k] {
				if changed[k] = nil; len(changed) > maxPatch {
					return m.whole("too many Ingresses changed")
				}
			}
		}
	}
	// Compile the changed Ingresses first: nothing of the memo is
	// changed until every one is simple.
	w := &world{services: p.w.services, slices: p.w.slices, in: in, backends: map[string]*model.Backend{}, memo: m, connectReq: opts.ConnectPerRequest} // memo: a valid ConfigMap of headers remembered (customheaders.go)
	var scratch Result
	scratch.Annotations = map[Verdict]map[string]int{}
	w.res = &scratch
	if w.resolveGlobal(opts, &scratch); len(scratch.ConfigMapEvents) > 0 { // globalheaders.go
		return Result{}, false
	}
	m.next = map[Key]*memoUnit{}
	defer func() { m.next = nil }()
	now := map[Key]*unit{}
	for k, ing := range changed {
		if old := p.units[k]; old != nil {
			if e := m.units[k]; !simple(old) || e == nil || len(e.events) > 0 || len(e.other) > 0 {
				return m.whole("a changed Ingress was not simple")
			}
		}
		if ing == nil || !p.ours(ing) {
			continue
		}
		u, refused := m.compile(ing, w, &scratch)
		if refused != "" || u == nil || !simple(u) || len(scratch.Events) > 0 || len(scratch.Annotations) > 0 || m.next[k] == nil {
			return m.whole("a changed Ingress is not simple")
		}
		now[k] = u
	}
	// Commit: from here the state is the new pass's, or dropped.
	m.pass = nil
	for _, ing := range restated { // the objects of this pass, for the next
		k := Key{ing.Namespace, ing.Name}
		delete(p.ptrs, p.objs[k])
		p.objs[k] = ing
		p.ptrs[ing] = struct{}{}
	}
	var touched []string
	for k := range changed {
		for _, u := range []*unit{p.units[k], now[k]} {
			if u == nil {
				continue
			}
			for _, x := range u.paths {
				touched = append(touched, x.host)
			}
		}
	}
	slices.SortFunc(touched, hostOrder)
	touched = slices.Compact(touched)
	for _, h := range touched {
		p.tb.hosts[h] = slices.DeleteFunc(slices.Clone(p.tb.hosts[h]), func(r rulePath) bool { _, ok := changed[r.u.key]; return ok })
	}
	added := false
	for k := range changed {
		if old := p.units[k]; old != nil {
			p.count(old, -1)
			delete(p.units, k)
		}
		if u := now[k]; u != nil {
			p.units[k] = u
			p.count(u, 1)
			for _, x := range u.paths {
				p.tb.hosts[x.host] = append(p.tb.hosts[x.host], rulePath{x, u})
			}
		}
	}
	for _, h := range touched {
		if len(p.tb.hosts[h]) == 0 {
			delete(p.tb.hosts, h)
		}
	}
	for n, c := range p.refs {
		if c == 0 {
			delete(p.refs, n)
			delete(p.backends, n)
			added = true
		} else if p.backends[n] == nil {
			p.backends[n] = w.backends[n]
			added = true
		}
	}
	if len(p.units) == 0 {
		return m.whole("no Ingress served")
	}
	// Events and annotation counts are the last pass's; so is Served
	// unless an Ingress came or went (shared: a Result is not modified).
	res := Result{Served: p.res.Served, Events: p.res.Events, Annotations: p.res.Annotations}
	cloned := false
	for k := range changed {
		if _, was := p.res.Served[k]; was != (now[k] != nil) {
			res.Served, cloned = maps.Clone(p.res.Served), true
			break
		}
	}
	for _, f := range p.res.Frontends {
		f.Binds = binds(opts, f.HTTP.Port)
		if f.HTTP = p.tb.patchTable(f.HTTP, touched, f.TLS != nil); f.HTTP == nil {
			return m.whole("a table not one run per host")
		}
		res.Frontends = append(res.Frontends, f)
	}
	res.Backends = slices.Clone(p.res.Backends)
	if added {
		res.Backends = res.Backends[:0]
		for _, n := range slices.Sorted(maps.Keys(p.backends)) {
			res.Backends = append(res.Backends, p.backends[n])
		}
	}
	for k, ing := range changed {
		if o := p.objs[k]; o != nil {
			delete(p.ptrs, o)
		}
		delete(m.last, k)
		delete(m.units, k)
		if ing == nil {
			delete(p.objs, k)
		} else {
			p.objs[k] = ing
			p.ptrs[ing] = struct{}{}
		}
		if now[k] != nil {
			m.last[k] = ing
			m.units[k] = m.next[k]
		}
		if cloned { // else served before and now, with the same addresses
			delete(res.Served, k)
			if now[k] != nil {
				res.Served[k] = opts.Addresses
			}
		}
	}
	p.in, p.res = in, res
	m.pass = p
	m.patched++
	m.why = ""
	return res, true
}

// whole records why a pass was not patched (Memo.Whole) and declines.
func (m *Memo) whole(why string) (Result, bool) {
	if m != nil {
		m.why = why
	}
	return Result{}, false
}

// Whole is why the last Compile was a whole pass ("" when it was
// patched, or with no memo): for a slow pass's log line.
func (m *Memo) Whole() string {
	if m == nil {
		return ""
	}
	return m.why
}
