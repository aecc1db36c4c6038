package ingress

import (
	"slices"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/haproxy-k8s-sync/haproxy-k8s-sync/internal/desired"
	"github.com/haproxy-k8s-sync/haproxy-k8s-sync/internal/model"
)

// requestHeaders are the request headers every rule of app-0's host
// sets ("" when none).
func requestHeaders(res Result) string {
	return appHeaders(res, func(a model.HTTPAction) []model.HeaderValue { return a.Set })
}

// TestGlobalHeaders: passes one after the other with one memo, the
// Ingress the same version throughout (the unit memo's case):
// proxy-set-headers and add-headers reach every path, an Ingress's own
// header of a name wins, a changed ConfigMap is followed, a bad one is
// an Event on the ConfigMap with its last valid headers kept, a missing
// one sets none.
func TestGlobalHeaders(t *testing.T) {
	setKey, addKey := Key{"ingress-system", "set"}, Key{"ingress-system", "add"}
	cm := func(k Key, rv string, data map[string]string) *corev1.ConfigMap {
		return &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: k.Namespace, Name: k.Name, ResourceVersion: rv}, Data: data}
	}
	own := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: "own", ResourceVersion: "1"},
		Data: map[string]string{"X-Frame-Options": "SAMEORIGIN"}}
	type pass struct {
		set, add   *corev1.ConfigMap // nil: missing
		req, resp  string
		event      string // a substring of a ConfigMap Event ("": none)
		ownHeaders bool   // the Ingress names its own custom-headers and headers
	}
	for _, tc := range []struct {
		name   string
		passes []pass
	}{
		{"set, changed, bad, missing", []pass{
			{set: cm(setKey, "1", map[string]string{"X-Using": "haproxy"}), add: cm(addKey, "1", map[string]string{"Strict-Transport-Security": "max-age=1; preload"}),
				req: "x-using=haproxy", resp: "strict-transport-security=max-age=1; preload"},
			{set: cm(setKey, "2", map[string]string{"X-Using": "haproxy 2"}), add: cm(addKey, "1", map[string]string{"Strict-Transport-Security": "max-age=1; preload"}),
				req: "x-using=haproxy 2", resp: "strict-transport-security=max-age=1; preload"},
			{set: cm(setKey, "3", map[string]string{"X-Using": "a|b"}), add: cm(addKey, "2", map[string]string{"X-Frame-Options": "DENY"}),
				req: "x-using=haproxy 2", resp: "x-frame-options=DENY", event: "set the value of \"X-Using\" is empty or holds a control character, a non-ASCII byte or one of % # \\ |: the headers of its version 2 are kept"},
			{set: cm(setKey, "4", map[string]string{"X-Start": "t=${msec}"}), add: cm(addKey, "2", map[string]string{"X-Frame-Options": "DENY"}),
				req: "x-using=haproxy 2", resp: "x-frame-options=DENY", event: "nginx variable"},
			{set: nil, add: cm(addKey, "2", map[string]string{"X-Frame-Options": "DENY"}),
				req: "", resp: "x-frame-options=DENY", event: "ingress-system/set is missing"},
		}},
		{"an Ingress's own headers win", []pass{
			{set: cm(setKey, "1", map[string]string{"X-Using": "haproxy", "X-Team": "all"}), add: cm(addKey, "1", map[string]string{"X-Frame-Options": "DENY", "X-B": "b"}),
				ownHeaders: true, req: "x-team=mine,x-using=haproxy", resp: "x-b=b,x-frame-options=SAMEORIGIN"},
		}},
		{"bad with none valid sets none", []pass{
			{set: cm(setKey, "1", map[string]string{"bad name": "x"}), add: nil, req: "", resp: "", event: "not a header name"},
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			memo := &Memo{}
			for i, p := range tc.passes {
				in := benchInput(1)
				ing := *in.Ingresses[0]
				ing.ResourceVersion, ing.UID = "7", "u"
				ing.Annotations = map[string]string{}
				if p.ownHeaders {
					ing.Annotations[customHeadersKey] = "own"
					ing.Annotations[HAProxyPrefix+"headers"] = "X-Team: mine"
				}
				in.Ingresses[0] = &ing
				in.ConfigMaps = map[Key]*corev1.ConfigMap{{"default", "own"}: own}
				if p.set != nil {
					in.ConfigMaps[setKey] = p.set
				}
				if p.add != nil {
					in.ConfigMaps[addKey] = p.add
				}
				res := Compile(in, Options{Class: "haproxy", Last: memo, ProxySetHeaders: setKey, AddHeaders: addKey})
				if got := requestHeaders(res); got != p.req {
					t.Errorf("pass %d: request headers %q, want %q", i, got, p.req)
				}
				if got := responseHeaders(t, res); got != p.resp {
					t.Errorf("pass %d: response headers %q, want %q", i, got, p.resp)
				}
				found := p.event == ""
				for _, e := range res.ConfigMapEvents {
					found = found || (strings.Contains(e.Message, p.event) && e.Reason == InvalidGlobalHeaders)
				}
				if !found || (p.event == "" && len(res.ConfigMapEvents) > 0) {
					t.Errorf("pass %d: ConfigMap Events %v, want one with %q", i, res.ConfigMapEvents, p.event)
				}
				if len(res.Events) > 0 {
					t.Errorf("pass %d: Ingress Events %v", i, res.Events)
				}
			}
		})
	}
}

// TestGlobalHeadersDefaultBackend: the controller-wide headers reach the
// requests spec.defaultBackend serves too (the catch-all host's last
// rule), not only the Ingresses' paths.
func TestGlobalHeadersDefaultBackend(t *testing.T) {
	setKey, addKey := Key{"ingress-system", "set"}, Key{"ingress-system", "add"}
	in := benchInput(1)
	ing := *in.Ingresses[0]
	ing.Annotations = nil
	ing.Spec.DefaultBackend = &ing.Spec.Rules[0].HTTP.Paths[0].Backend
	ing.Spec.Rules = nil
	in.Ingresses[0] = &ing
	in.ConfigMaps = map[Key]*corev1.ConfigMap{
		setKey: {ObjectMeta: metav1.ObjectMeta{Namespace: setKey.Namespace, Name: setKey.Name, ResourceVersion: "1"}, Data: map[string]string{"X-Using": "haproxy"}},
		addKey: {ObjectMeta: metav1.ObjectMeta{Namespace: addKey.Namespace, Name: addKey.Name, ResourceVersion: "1"}, Data: map[string]string{"Server": "haproxy-k8s-sync"}},
	}
	res := Compile(in, Options{Class: "haproxy", ProxySetHeaders: setKey, AddHeaders: addKey})
	var found bool
	for _, f := range res.Frontends {
		if f.HTTP == nil {
			continue
		}
		for _, h := range f.HTTP.Hosts {
			if h.Name != model.AnyHost || len(h.Rules) == 0 {
				continue
			}
			a := f.HTTP.Actions[h.Rules[len(h.Rules)-1].Action]
			found = true
			if len(a.Set) != 1 || a.Set[0] != (model.HeaderValue{Name: "x-using", Value: "haproxy"}) {
				t.Errorf("%s: the default backend's request headers %v, want x-using=haproxy", f.Name, a.Set)
			}
			if a.Ext == nil || len(a.Ext.Response.Set) != 1 || a.Ext.Response.Set[0] != (model.HeaderValue{Name: "server", Value: "haproxy-k8s-sync"}) {
				t.Errorf("%s: the default backend's response headers %+v, want server=haproxy-k8s-sync", f.Name, a.Ext)
			}
		}
	}
	if !found {
		t.Fatal("no catch-all host serving the default backend")
	}
}

// TestDefaultBackendServing: of the Ingresses with a defaultBackend, the
// oldest whose backend has a server serves every unmatched request; with
// none serving, the oldest (ingress-controller-conformance's default
// backend feature: the ended scenario's Ingress, its Pods gone, stayed
// the catch-all and every request was 503).
func TestDefaultBackendServing(t *testing.T) {
	for _, c := range []struct {
		name        string
		dropSlices  []int // Ingresses whose EndpointSlice is gone
		wantBackend string
	}{
		{"both serve: the oldest", nil, "app-0"},
		{"the oldest has no server: the next", []int{0}, "app-1"},
		{"none serves: the oldest", []int{0, 1}, "app-0"},
	} {
		t.Run(c.name, func(t *testing.T) {
			in := benchInput(2)
			for i, ing := range in.Ingresses {
				x := *ing
				x.Annotations = nil
				x.Spec.DefaultBackend = &x.Spec.Rules[0].HTTP.Paths[0].Backend
				x.Spec.Rules = nil
				in.Ingresses[i] = &x
			}
			var kept []*desired.Slice
			for i, s := range in.Slices {
				if !slices.Contains(c.dropSlices, i) {
					kept = append(kept, s)
				}
			}
			in.Slices = kept
			res := Compile(in, Options{Class: "haproxy"})
			got := ""
			for _, f := range res.Frontends {
				for _, h := range f.HTTP.Hosts {
					if h.Name == model.AnyHost && len(h.Rules) > 0 {
						a := f.HTTP.Actions[h.Rules[len(h.Rules)-1].Action]
						got = a.Backends[0].Name
					}
				}
			}
			if !strings.Contains(got, "_"+c.wantBackend+"_") {
				t.Errorf("the catch-all's backend %q, want %s's", got, c.wantBackend)
			}
		})
	}
}
