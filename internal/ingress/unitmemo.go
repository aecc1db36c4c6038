package ingress

import (
	"slices"

	netv1 "k8s.io/api/networking/v1"

	"github.com/haproxy-k8s-sync/haproxy-k8s-sync/internal/model"
)

// The per-Ingress memo: a pass compiles only the Ingresses whose object
// changed, or whose Service backends now resolve to another model backend
// or fail otherwise. The rest reuse the unit of their last compilation
// and tell what it told (its Events, its annotation counts), so Compile's
// result is the one of compiling every Ingress (TestUnitMemoIsTheWholeCompile).
//
// What a unit depends on beyond its object:
//   - its Service backends: each w.backend call is replayed (a map lookup
//     and, for a model backend new to the pass, its servers) and must
//     give the same name and the same reason as when it was compiled;
//     a Service or its EndpointSlices that change change the backend
//     itself, which is built each pass, not the unit;
//   - Secrets (basic authentication, backend TLS): an Ingress that reads
//     one is compiled every pass (not memoised);
//   - nothing of Options: compileOne does not read them.

// memoUnit is one Ingress's compilation.
type memoUnit struct {
	ing       *netv1.Ingress
	u         *unit
	v         variant
	calls     []backendCall
	events    []Event
	other     []notHonoured
	cacheable bool
}

// backendCall is one w.backend call of compileOne and what it answered.
type backendCall struct {
	b         *netv1.IngressBackend
	name, why string
}

// sameObject: the Ingress compiled is ing (the same object, or the same
// version of it).
func (e *memoUnit) sameObject(ing *netv1.Ingress) bool {
	if e.ing == ing {
		return true
	}
	return ing.ResourceVersion != "" && ing.ResourceVersion == e.ing.ResourceVersion && ing.UID == e.ing.UID
}

// replay tells what the unit told into res and returns a copy of it
// (build changes the units it gets); nil when a backend does not resolve
// as it did.
func (e *memoUnit) replay(ing *netv1.Ingress, w *world, res *Result) *unit {
	for _, c := range e.calls {
		// The same IngressBackend of an object with the same version:
		// the pointer of the version compiled is as good.
		if n, why := w.backend(ing.Namespace, c.b, e.v); n != c.name || why != c.why {
			return nil
		}
	}
	for _, c := range e.calls {
		if c.why != "" {
			w.backends[model.RejectBackend] = &model.Backend{Name: model.RejectBackend, Balance: "roundrobin", Servers: []model.Server{}}
		}
	}
	countOthers(res, e.other)
	res.Events = append(res.Events, e.events...)
	u := *e.u
	u.paths = slices.Clone(e.u.paths)
	return &u
}

// countOthers adds an Ingress's annotations not honoured to the counts.
func countOthers(res *Result, other []notHonoured) {
	for _, o := range other {
		if res.Annotations[o.verdict] == nil {
			res.Annotations[o.verdict] = map[string]int{}
		}
		res.Annotations[o.verdict][o.key]++
	}
}

// compile is compileOne through the memo (m nil: compileOne).
func (m *Memo) compile(ing *netv1.Ingress, w *world, res *Result) (*unit, string) {
	if m == nil {
		return compileOne(ing, w, res)
	}
	k := Key{ing.Namespace, ing.Name}
	if m.next == nil {
		m.next = make(map[Key]*memoUnit, len(m.units))
	}
	if e := m.units[k]; e != nil && e.sameObject(ing) {
		if u := e.replay(ing, w, res); u != nil {
			m.next[k] = e
			m.hits++
			return u, ""
		}
	}
	rec := &memoUnit{ing: ing}
	first := len(res.Events)
	w.rec = rec
	u, refused := compileOne(ing, w, res)
	w.rec = nil
	if !rec.cacheable || u == nil {
		return u, refused
	}
	rec.events = slices.Clone(res.Events[first:])
	c := *u
	c.paths = slices.Clone(u.paths)
	rec.u = &c
	m.next[k] = rec
	return u, refused
}
