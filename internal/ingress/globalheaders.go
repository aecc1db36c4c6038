package ingress

import (
	"slices"
	"strings"

	"github.com/haproxy-k8s-sync/haproxy-k8s-sync/internal/model"
)

// The controller-wide headers of ingress-nginx's ConfigMap keys
// proxy-set-headers (request headers sent to the Pods) and add-headers
// (response headers sent to the clients), each a ConfigMap of headers
// named by a flag of run (Options.ProxySetHeaders, Options.AddHeaders):
// every path of every Ingress carries them, as map data (a value
// changed reloads nothing). An Ingress's own headers of the same name
// win (HAProxy Ingress's headers for requests, custom-headers for
// responses).
//
// The ConfigMaps are read like custom-headers' (parseCustomHeaders); a
// bad or oversized one is a Warning Event InvalidGlobalHeaders on the
// ConfigMap (Result.ConfigMapEvents) and its last valid version's
// headers are kept; missing, or bad with none valid since the start, no
// headers are set (no Ingress is refused for them).

// globalHeaders are the controller-wide headers of a pass. The memo
// hands out the same object while the ConfigMaps' versions are the
// same, so a unit compiled with it is reused by pointer (unitmemo.go).
type globalHeaders struct {
	request, response []model.HeaderValue
	setRV, addRV      string // the versions read ("": missing)
}

// InvalidGlobalHeaders is the reason of an Event on a bad ConfigMap of
// proxy-set-headers or add-headers.
const InvalidGlobalHeaders = "InvalidGlobalHeaders"

// resolveGlobal reads the ConfigMaps opts names into w.global, with
// their Events in res.ConfigMapEvents.
func (w *world) resolveGlobal(opts Options, res *Result) {
	if opts.ProxySetHeaders == (Key{}) && opts.AddHeaders == (Key{}) {
		return
	}
	rv := func(k Key) string {
		if cm := w.in.ConfigMaps[k]; cm != nil && k != (Key{}) {
			return cm.ResourceVersion
		}
		return ""
	}
	setRV, addRV := rv(opts.ProxySetHeaders), rv(opts.AddHeaders)
	var last *globalHeaders
	if w.memo != nil {
		last = w.memo.global
	}
	g := &globalHeaders{setRV: setRV, addRV: addRV}
	var bad []Event
	g.request = w.globalList(opts.ProxySetHeaders, "proxy-set-headers", &bad)
	g.response = w.globalList(opts.AddHeaders, "add-headers", &bad)
	res.ConfigMapEvents = append(res.ConfigMapEvents, bad...)
	if last != nil && last.setRV == setRV && last.addRV == addRV && slices.Equal(last.request, g.request) && slices.Equal(last.response, g.response) {
		g = last // the same object: units compiled with it are reused
	}
	w.global = g
	if w.memo != nil {
		w.memo.global = g
		w.memo.globalKeys = []Key{opts.ProxySetHeaders, opts.AddHeaders}
	}
}

// globalList is the headers of the ConfigMap k (zero: none) of the
// flag's key what, or its last valid version's when it is bad.
func (w *world) globalList(k Key, what string, events *[]Event) []model.HeaderValue {
	if k == (Key{}) {
		return nil
	}
	cm := w.in.ConfigMaps[k]
	if cm == nil {
		*events = append(*events, Event{k, InvalidGlobalHeaders, what + ": ConfigMap " + k.String() + " is missing: no headers are set"})
		return nil
	}
	hs, why := parseCustomHeaders(cm)
	if i := slices.IndexFunc(hs, func(h model.HeaderValue) bool { return strings.Contains(h.Value, "$") }); why == "" && i >= 0 {
		// ingress-nginx's values may name nginx variables ($host):
		// sent as they are they would be wrong.
		hs, why = nil, "the value of "+hs[i].Name+" holds '$' (an nginx variable, not supported)"
	}
	if why == "" {
		w.keepHeaders(k, lastHeaders{rv: cm.ResourceVersion, headers: hs})
		return hs
	}
	if last, had := w.lastHeaders(k); had {
		*events = append(*events, Event{k, InvalidGlobalHeaders, what + ": ConfigMap " + k.String() + " " + why + ": the headers of its version " + last.rv + " are kept"})
		return last.headers
	}
	*events = append(*events, Event{k, InvalidGlobalHeaders, what + ": ConfigMap " + k.String() + " " + why + ": no headers are set"})
	return nil
}

// withGlobal is own (an Ingress's headers) over base (the
// controller-wide ones): base's headers whose name own does not set,
// and own's, sorted by name. own itself when base is empty.
func withGlobal(base, own []model.HeaderValue) []model.HeaderValue {
	if len(base) == 0 {
		return own
	}
	out := slices.Clone(own)
	for _, h := range base {
		if !slices.ContainsFunc(own, func(o model.HeaderValue) bool { return o.Name == h.Name }) {
			out = append(out, h)
		}
	}
	slices.SortFunc(out, func(a, b model.HeaderValue) int { return strings.Compare(a.Name, b.Name) })
	return out
}

// globalRequest and globalResponse are the pass's controller-wide
// headers (nil: none).
func (w *world) globalRequest() []model.HeaderValue {
	if w.global == nil {
		return nil
	}
	return w.global.request
}

func (w *world) globalResponse() []model.HeaderValue {
	if w.global == nil {
		return nil
	}
	return w.global.response
}
