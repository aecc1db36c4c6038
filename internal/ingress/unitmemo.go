package ingress

import (
	"maps"
	"slices"

	corev1 "k8s.io/api/core/v1"
	netv1 "k8s.io/api/networking/v1"
	"k8s.io/apimachinery/pkg/api/equality"

	"github.com/haproxy-k8s-sync/haproxy-k8s-sync/internal/desired"
	"github.com/haproxy-k8s-sync/haproxy-k8s-sync/internal/model"
)

// The per-Ingress memo: a pass compiles only the Ingresses whose object
// changed, or whose Service backends now resolve to another model backend
// or fail otherwise. The rest reuse the unit of their last compilation
// and tell what it told (its Events, its annotation counts), so Compile's
// result is the one of compiling every Ingress (TestUnitMemoIsTheWholeCompile).
//
// What a unit depends on beyond its object:
//   - its Service backends: while the Service and its EndpointSlices are
//     the objects read (by pointer: never changed in place), the model
//     backend made is reused as it is; otherwise the w.backend call is
//     made again and must give the same name and the same reason as when
//     it was compiled (a new Endpoint changes the backend, not the unit);
//   - the ConfigMap of custom-headers: while its resourceVersion is the
//     one read (customheaders.go);
//   - Secrets (basic authentication, backend TLS): an Ingress that reads
//     one is compiled every pass (not memoised);
//   - the controller-wide headers (Options.ProxySetHeaders, AddHeaders):
//     while the pass's are the object compiled with (globalheaders.go);
//   - nothing else of Options: compileOne does not read them.

// memoUnit is one Ingress's compilation.
type memoUnit struct {
	ing       *netv1.Ingress
	u         *unit
	v         variant
	calls     []backendCall
	events    []Event
	other     []notHonoured
	headers   []headersRead  // the ConfigMaps of custom-headers read (customheaders.go)
	global    *globalHeaders // the controller-wide headers compiled with (globalheaders.go)
	cacheable bool
}

// backendCall is one w.backend call of compileOne, what it answered,
// and what it read: while the Service and its EndpointSlices are these,
// the backend is this one.
type backendCall struct {
	b         *netv1.IngressBackend
	name, why string
	svc       *corev1.Service
	slices    []*desired.Slice
	backend   *model.Backend
}

// call records a w.backend call of the Ingress compiled (e nil: none).
func (e *memoUnit) call(w *world, ns string, b *netv1.IngressBackend, v variant, name, why string) {
	if e == nil {
		return
	}
	c := backendCall{b: b, name: name, why: why, backend: w.backends[name]}
	if b.Service != nil {
		k := Key{ns, b.Service.Name}
		c.svc, c.slices = w.services[k], w.slices[k]
	}
	e.calls = append(e.calls, c)
	e.v = v
}

// same reports whether the call reads what it read.
func (c *backendCall) same(w *world, ns string) bool {
	if c.b.Service == nil || c.why != "" {
		return false
	}
	k := Key{ns, c.b.Service.Name}
	return c.svc != nil && w.services[k] == c.svc && slices.Equal(w.slices[k], c.slices)
}

// sameObject: the Ingress compiled is ing (the same object, or the same
// version of it).
func (e *memoUnit) sameObject(ing *netv1.Ingress) bool {
	if e.ing == ing {
		return true
	}
	return ing.ResourceVersion != "" && ing.ResourceVersion == e.ing.ResourceVersion && ing.UID == e.ing.UID ||
		sameCompiled(e.ing, ing)
}

// sameCompiled reports whether b compiles as a does: the same Ingress
// (UID, namespace, name, creation time) with the same spec and
// annotations, everything compileOne and the class filter read of it. A
// status written (ours at every new Ingress, another controller's) makes
// a new object and resourceVersion but nothing to compile.
func sameCompiled(a, b *netv1.Ingress) bool {
	return a.UID == b.UID && a.Namespace == b.Namespace && a.Name == b.Name &&
		a.CreationTimestamp.Equal(&b.CreationTimestamp) && maps.Equal(a.Annotations, b.Annotations) &&
		equality.Semantic.DeepEqual(a.Spec, b.Spec)
}

// replay tells what the unit told into res and returns a copy of it
// (build changes the units it gets); nil when a backend does not resolve
// as it did.
func (e *memoUnit) replay(ing *netv1.Ingress, w *world, res *Result) *unit {
	for i := range e.calls {
		c := &e.calls[i]
		if c.same(w, ing.Namespace) {
			// The backend it made (equal to what it would make now).
			if _, ok := w.backends[c.name]; !ok {
				w.backends[c.name] = c.backend
			}
			continue
		}
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
	if e := m.units[k]; e != nil && e.sameObject(ing) && e.sameHeaders(w) && e.global == w.global {
		if u := e.replay(ing, w, res); u != nil {
			m.next[k] = e
			m.hits++
			return u, ""
		}
	}
	rec := &memoUnit{ing: ing, global: w.global}
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
