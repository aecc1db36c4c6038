package source

import (
	"sync"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	gwv1 "sigs.k8s.io/gateway-api/apis/v1"
)

// Interning (issue 30, the controller's memory at 10,000 HTTPRoutes):
// the informers decode every object on its own, so each string a route
// repeats (its namespace and kind, the groups, kinds and names of its
// references, the path types, and the conditions our own status writes)
// is one more copy per route. The transform shares the bytes of those
// strings between the cached objects through one small table (strs):
// only fields whose values repeat across objects are interned, a
// route's name, UID, resourceVersion and hostnames stay as decoded.
// Pointers are not shared: each object keeps its own, only what they
// point at is a shared string. The objects stay equal field for field
// but for that annotation (TestInternKeepsTheRoute).

// internLimit: longer strings are left as they are (a condition message
// naming many listeners is seldom repeated).
const internLimit = 256

// internEntries bounds the table: when full it starts again empty (the
// strings already shared stay shared; only the sharing of later ones
// starts over), so it never holds more than internEntries strings of
// at most internLimit bytes, whatever the cluster holds. A map lookup
// under a lock costs a route about a tenth of the runtime's weak
// canonicalisation map (unique.Make: ~12 µs a route,
// BenchmarkInternHTTPRoute).
const internEntries = 8192

// strs is the table of interned strings, for every informer's transform.
var strs = struct {
	sync.Mutex
	m map[string]string
}{m: map[string]string{}}

// str returns s with its bytes shared with every equal string interned.
func str[S ~string](s S) S {
	if s == "" || len(s) > internLimit {
		return s
	}
	strs.Lock()
	defer strs.Unlock()
	if c, ok := strs.m[string(s)]; ok {
		return S(c)
	}
	if len(strs.m) >= internEntries {
		strs.m = make(map[string]string, internEntries)
	}
	strs.m[string(s)] = string(s)
	return s
}

// strp interns what p points at, in place.
func strp[S ~string](p *S) {
	if p != nil {
		*p = str(*p)
	}
}

// internMeta interns what objects share of their type and metadata, and
// drops the copy of the whole object `kubectl apply` keeps in an
// annotation (as large as the rest of a route, and read by nothing here:
// the status is written through the status subresource, which never
// changes the metadata).
func internMeta(t *metav1.TypeMeta, m *metav1.ObjectMeta) {
	t.Kind, t.APIVersion = str(t.Kind), str(t.APIVersion)
	m.Namespace = str(m.Namespace)
	if _, ok := m.Annotations[corev1.LastAppliedConfigAnnotation]; ok {
		delete(m.Annotations, corev1.LastAppliedConfigAnnotation)
		if len(m.Annotations) == 0 {
			m.Annotations = nil
		}
	}
}

// internParentRef interns a reference to a route's parent.
func internParentRef(r *gwv1.ParentReference) {
	strp(r.Group)
	strp(r.Kind)
	strp(r.Namespace)
	r.Name = str(r.Name)
	strp(r.SectionName)
}

// internBackendRef interns a route's reference to a backend (its name
// too: many routes name one Service).
func internBackendRef(r *gwv1.BackendObjectReference) {
	strp(r.Group)
	strp(r.Kind)
	strp(r.Namespace)
	r.Name = str(r.Name)
}

// internRouteCommon interns what every route kind has: its type and
// metadata, its parents and its status (the parents' references, the
// controller names and the conditions).
func internRouteCommon(t *metav1.TypeMeta, m *metav1.ObjectMeta, spec *gwv1.CommonRouteSpec, st *gwv1.RouteStatus) {
	internMeta(t, m)
	for i := range spec.ParentRefs {
		internParentRef(&spec.ParentRefs[i])
	}
	for i := range st.Parents {
		p := &st.Parents[i]
		internParentRef(&p.ParentRef)
		p.ControllerName = str(p.ControllerName)
		for j := range p.Conditions {
			c := &p.Conditions[j]
			c.Type, c.Status, c.Reason, c.Message = str(c.Type), str(c.Status), str(c.Reason), str(c.Message)
		}
	}
}

// internHTTPRoute interns r's repeated strings in place.
func internHTTPRoute(r *gwv1.HTTPRoute) {
	internRouteCommon(&r.TypeMeta, &r.ObjectMeta, &r.Spec.CommonRouteSpec, &r.Status.RouteStatus)
	for i := range r.Spec.Rules {
		rule := &r.Spec.Rules[i]
		for j := range rule.Matches {
			m := &rule.Matches[j]
			if m.Path != nil {
				strp(m.Path.Type)
				strp(m.Path.Value)
			}
			for k := range m.Headers {
				strp(m.Headers[k].Type)
				m.Headers[k].Name = str(m.Headers[k].Name)
			}
			strp(m.Method)
		}
		for j := range rule.Filters {
			rule.Filters[j].Type = str(rule.Filters[j].Type)
		}
		for j := range rule.BackendRefs {
			internBackendRef(&rule.BackendRefs[j].BackendObjectReference)
			for k := range rule.BackendRefs[j].Filters {
				rule.BackendRefs[j].Filters[k].Type = str(rule.BackendRefs[j].Filters[k].Type)
			}
		}
	}
}

// internGRPCRoute interns r's repeated strings in place.
func internGRPCRoute(r *gwv1.GRPCRoute) {
	internRouteCommon(&r.TypeMeta, &r.ObjectMeta, &r.Spec.CommonRouteSpec, &r.Status.RouteStatus)
	for i := range r.Spec.Rules {
		rule := &r.Spec.Rules[i]
		for j := range rule.BackendRefs {
			internBackendRef(&rule.BackendRefs[j].BackendObjectReference)
		}
	}
}
