package ingress

import (
	"maps"
	"slices"
	"strconv"
	"strings"

	corev1 "k8s.io/api/core/v1"
	netv1 "k8s.io/api/networking/v1"

	"github.com/haproxy-k8s-sync/haproxy-k8s-sync/internal/model"
	"github.com/haproxy-k8s-sync/haproxy-k8s-sync/internal/settings"
)

// ingress-nginx's custom-headers: the ConfigMap it names (`name` or
// `namespace/name` of the Ingress's own namespace) holds response
// headers, each key a header name and its value the header's value, set
// on every answer of the Ingress's paths (model.HTTPActionExt.Response:
// map data, so a value changed reloads nothing; a header name the table
// has not had yet is one reload the first time, as for HTTPRoutes).
//
// A ConfigMap missing, too large or holding a name or value that could
// reach HAProxy's syntax or a map's separators (model.ValidHeaderName,
// model.ValidHeaderSetValue: a value may hold spaces, ';' and quotes,
// which the map file and the Runtime API carry exactly, but no control
// character, '%', '#', '\', '|' or non-ASCII) is an Event
// InvalidCustomHeaders; the headers of its last valid
// version (Memo) are kept, and without one the Ingress is refused (its
// last good version kept).

// MaxCustomHeaders and MaxCustomHeaderBytes bound a ConfigMap of
// headers: the source keeps the data of no larger ConfigMap
// (HeaderData).
const (
	MaxCustomHeaders     = 32
	MaxCustomHeaderBytes = 16 << 10
)

// HeaderData is what the source keeps of a ConfigMap's data for
// custom-headers: all of it (but caKey) when it may be a header list
// (at most MaxCustomHeaders keys, each a header name, and
// MaxCustomHeaderBytes), else nil. The values are checked by Compile.
func HeaderData(data map[string]string, caKey string) map[string]string {
	n, size := 0, 0
	for k, v := range data {
		if k == caKey {
			continue
		}
		n, size = n+1, size+len(k)+len(v)
		if n > MaxCustomHeaders || size > MaxCustomHeaderBytes || !model.ValidHeaderName(strings.ToLower(k)) {
			return nil
		}
	}
	if n == 0 {
		return nil
	}
	out := make(map[string]string, n)
	for k, v := range data {
		if k != caKey {
			out[k] = v
		}
	}
	return out
}

// badSetValue is why a header's value is refused (not
// model.ValidHeaderSetValue).
const badSetValue = "is empty or holds a control character, a non-ASCII byte or one of % # \\ |"

// HeaderConfigMaps are cms as the source keeps them (HeaderData, by
// key), for render, which reads them from files.
func HeaderConfigMaps(cms []*corev1.ConfigMap) map[Key]*corev1.ConfigMap {
	out := make(map[Key]*corev1.ConfigMap, len(cms))
	for _, c := range cms {
		kept := *c
		kept.Data = HeaderData(c.Data, "")
		out[Key{c.Namespace, c.Name}] = &kept
	}
	return out
}

// customHeadersKey is the annotation naming the ConfigMap.
const customHeadersKey = NginxPrefix + "custom-headers"

// CustomHeadersRef is the ConfigMap an Ingress's custom-headers names
// (false: none, or another namespace's: refused by Compile).
func CustomHeadersRef(namespace string, annotations map[string]string) (Key, bool) {
	v, ok := annotations[customHeadersKey]
	if !ok {
		return Key{}, false
	}
	k, ok := ownRef(namespace, strings.TrimSpace(v))
	return k, ok
}

// ownRef reads `name` or `namespace/name` of namespace.
func ownRef(namespace, v string) (Key, bool) {
	ns, name, cut := strings.Cut(v, "/")
	if !cut {
		ns, name = namespace, v
	}
	if ns != namespace || name == "" || strings.Contains(name, "/") {
		return Key{}, false
	}
	return Key{ns, name}, true
}

// headersRead is a ConfigMap of headers a unit read, for the memo.
type headersRead struct {
	key Key
	rv  string // "" when it was missing
}

// lastHeaders is the last valid version of a ConfigMap of headers.
type lastHeaders struct {
	rv      string
	headers []model.HeaderValue
}

// parseCustomHeaders checks a ConfigMap's data: the headers, sorted by
// name, or why not.
func parseCustomHeaders(cm *corev1.ConfigMap) ([]model.HeaderValue, string) {
	if len(cm.Data) == 0 {
		return nil, "holds no header list (at most " + strconv.Itoa(MaxCustomHeaders) + " keys, each a header name, and " +
			strconv.Itoa(MaxCustomHeaderBytes>>10) + " KiB)"
	}
	var out []model.HeaderValue
	for k, v := range cm.Data {
		n, v := strings.ToLower(k), strings.TrimSpace(v)
		if !model.ValidHeaderName(n) {
			return nil, "key " + settings.ShowValue(k) + " is not a header name"
		}
		if v == "" || !model.ValidHeaderSetValue(v) {
			return nil, "the value of " + settings.ShowValue(k) + " " + badSetValue
		}
		out = setHeader(out, n, v)
	}
	return out, ""
}

// customHeaders resolves an Ingress's custom-headers: the response
// headers (nil: none), or why the Ingress is refused.
func (w *world) customHeaders(ing *netv1.Ingress, event func(reason, msg string)) ([]model.HeaderValue, string) {
	v, ok := ing.Annotations[customHeadersKey]
	if !ok {
		return nil, ""
	}
	k, ok := ownRef(ing.Namespace, strings.TrimSpace(v))
	if !ok {
		return nil, "annotation " + customHeadersKey + ": " + settings.ShowValue(v) + " is not a ConfigMap of the Ingress's namespace"
	}
	cm := w.in.ConfigMaps[k]
	read := headersRead{key: k}
	if cm != nil {
		read.rv = cm.ResourceVersion
	}
	if w.rec != nil {
		w.rec.headers = append(w.rec.headers, read)
	}
	why := "is missing"
	if cm != nil {
		hs, bad := parseCustomHeaders(cm)
		if bad == "" {
			w.keepHeaders(k, lastHeaders{rv: cm.ResourceVersion, headers: hs})
			return hs, ""
		}
		why = bad
	}
	last, had := w.lastHeaders(k)
	if had {
		event("InvalidCustomHeaders", "ConfigMap "+k.String()+" "+why+": the headers of its version "+last.rv+" are kept")
		return last.headers, ""
	}
	return nil, "annotation " + customHeadersKey + ": ConfigMap " + k.String() + " " + why
}

// withHeaders is a path's extended features with the response headers hs
// set.
func withHeaders(ext *model.HTTPActionExt, hs []model.HeaderValue) *model.HTTPActionExt {
	if len(hs) == 0 {
		return ext
	}
	x := model.HTTPActionExt{}
	if ext != nil {
		x = *ext
	}
	x.Response.Set = slices.Clone(hs)
	return &x
}

// sameHeaders reports whether the ConfigMaps of custom-headers the unit
// read are the versions it read.
func (e *memoUnit) sameHeaders(w *world) bool {
	for _, r := range e.headers {
		rv := ""
		if cm := w.in.ConfigMaps[r.key]; cm != nil {
			rv = cm.ResourceVersion
		}
		if rv != r.rv || rv == "" {
			return false
		}
	}
	return true
}

// keepHeaders remembers a valid version of a ConfigMap of headers.
func (w *world) keepHeaders(k Key, l lastHeaders) {
	if w.memo == nil {
		return
	}
	if w.memo.headers == nil {
		w.memo.headers = map[Key]lastHeaders{}
	}
	w.memo.headers[k] = l
}

// lastHeaders is the last valid version of a ConfigMap of headers.
func (w *world) lastHeaders(k Key) (lastHeaders, bool) {
	if w.memo == nil {
		return lastHeaders{}, false
	}
	l, ok := w.memo.headers[k]
	return l, ok
}

// pruneHeaders forgets the ConfigMaps no kept Ingress names.
func (m *Memo) pruneHeaders(kept map[Key]*netv1.Ingress) {
	if len(m.headers) == 0 {
		return
	}
	named := map[Key]bool{}
	for _, k := range m.globalKeys {
		named[k] = true // globalheaders.go
	}
	for _, ing := range kept {
		if k, ok := CustomHeadersRef(ing.Namespace, ing.Annotations); ok {
			named[k] = true
		}
	}
	maps.DeleteFunc(m.headers, func(k Key, _ lastHeaders) bool { return !named[k] })
}
