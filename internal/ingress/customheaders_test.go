package ingress

import (
	"fmt"
	"slices"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/haproxy-k8s-sync/haproxy-k8s-sync/internal/model"
)

// responseHeaders are the response headers every rule of app-0's host
// sets ("refused" when the Ingress is not served; "" when none).
func responseHeaders(t *testing.T, res Result) string {
	t.Helper()
	if _, ok := res.Served[Key{"default", "app-0"}]; !ok {
		return "refused"
	}
	return appHeaders(res, func(a model.HTTPAction) []model.HeaderValue {
		if a.Ext == nil {
			return nil
		}
		return a.Ext.Response.Set
	})
}

// appHeaders are the headers of which every rule of app-0's host's
// action sets ("name=value,..."; "" when none).
func appHeaders(res Result, of func(model.HTTPAction) []model.HeaderValue) string {
	var out []string
	for _, f := range res.Frontends {
		if f.HTTP == nil {
			continue
		}
		for _, h := range f.HTTP.Hosts {
			if h.Name != "app-0.example.com" {
				continue
			}
			for _, r := range h.Rules {
				var hs []string
				for _, v := range of(f.HTTP.Actions[r.Action]) {
					hs = append(hs, v.Name+"="+v.Value)
				}
				out = append(out, strings.Join(hs, ","))
			}
		}
	}
	out = slices.Compact(out)
	if len(out) != 1 {
		return fmt.Sprintf("rules differ: %q", out)
	}
	return out[0]
}

// TestCustomHeaders: a pass after another, with one memo: custom-headers
// sets the ConfigMap's headers on the answers; a bad ConfigMap is an
// Event and its last valid version kept, or the Ingress refused when it
// never had one; another namespace's ConfigMap is refused.
func TestCustomHeaders(t *testing.T) {
	cm := func(rv string, data map[string]string) *corev1.ConfigMap {
		return &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: "hdrs", ResourceVersion: rv}, Data: data}
	}
	type pass struct {
		ref   string            // the annotation ("": none)
		cm    *corev1.ConfigMap // nil: missing
		want  string
		event string // a substring of an Event on app-0 ("": none)
	}
	for _, tc := range []struct {
		name   string
		same   bool // the Ingress's version is the same every pass (the unit memo's case)
		passes []pass
	}{
		{"the memo follows the ConfigMap's version", true, []pass{
			{"hdrs", cm("1", map[string]string{"x-a": "1"}), "x-a=1", ""},
			{"hdrs", cm("1", map[string]string{"x-a": "1"}), "x-a=1", ""},
			{"hdrs", cm("2", map[string]string{"x-a": "2"}), "x-a=2", ""},
			{"hdrs", cm("3", map[string]string{"x-a": "a|b"}), "x-a=2", "InvalidCustomHeaders"},
			{"hdrs", cm("3", map[string]string{"x-a": "a|b"}), "x-a=2", "InvalidCustomHeaders"},
		}},
		{"set then changed", false, []pass{
			{"hdrs", cm("1", map[string]string{"X-Frame-Options": "DENY", "x-a": "1"}), "x-a=1,x-frame-options=DENY", ""},
			{"default/hdrs", cm("2", map[string]string{"x-a": "2"}), "x-a=2", ""},
			{"", cm("2", map[string]string{"x-a": "2"}), "", ""},
		}},
		{"bad value keeps the last valid", false, []pass{
			{"hdrs", cm("1", map[string]string{"x-a": "1"}), "x-a=1", ""},
			{"hdrs", cm("2", map[string]string{"x-a": "1\nhttp-request deny"}), "x-a=1", "InvalidCustomHeaders"},
			{"hdrs", cm("3", map[string]string{"x-a": "a|b"}), "x-a=1", "version 1 are kept"},
			{"hdrs", cm("4", map[string]string{"x-a": "100%"}), "x-a=1", "InvalidCustomHeaders"},
			{"hdrs", cm("5", map[string]string{"x-a": "a\\;b"}), "x-a=1", "InvalidCustomHeaders"},
			{"hdrs", cm("6", map[string]string{"x-a": "a\tb"}), "x-a=1", "InvalidCustomHeaders"},
			{"hdrs", nil, "x-a=1", "is missing"},
			{"hdrs", cm("7", map[string]string{"x-a": "3"}), "x-a=3", ""},
		}},
		{"bad without a valid one refuses", false, []pass{
			{"hdrs", cm("1", map[string]string{"x-a": "has#hash"}), "refused", "Refused"},
			{"hdrs", nil, "refused", "is missing"},
			{"hdrs", cm("2", map[string]string{"bad name": "v"}), "refused", "not a header name"},
		}},
		{"spaces, ';' and quotes", false, []pass{
			{"hdrs", cm("1", map[string]string{"Strict-Transport-Security": " max-age=31536000; includeSubDomains ",
				"Content-Security-Policy": `default-src 'self'; img-src "data:"`}),
				`content-security-policy=default-src 'self'; img-src "data:",strict-transport-security=max-age=31536000; includeSubDomains`, ""},
		}},
		{"another namespace", false, []pass{
			{"kube-system/hdrs", cm("1", map[string]string{"x-a": "1"}), "refused", "Ingress's namespace"},
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			memo := &Memo{}
			for i, p := range tc.passes {
				in := benchInput(1)
				ing := *in.Ingresses[0]
				ing.ResourceVersion, ing.UID = fmt.Sprint(i), "u" // a new version every pass
				if tc.same {
					ing.ResourceVersion = "7"
				}
				ing.Annotations = map[string]string{}
				if p.ref != "" {
					ing.Annotations[customHeadersKey] = p.ref
				}
				in.Ingresses[0] = &ing
				in.ConfigMaps = map[Key]*corev1.ConfigMap{}
				if p.cm != nil {
					in.ConfigMaps[Key{"default", "hdrs"}] = p.cm
					if p.ref == "kube-system/hdrs" {
						in.ConfigMaps = map[Key]*corev1.ConfigMap{{"kube-system", "hdrs"}: p.cm}
					}
				}
				res := Compile(in, Options{Class: "haproxy", Last: memo})
				if got := responseHeaders(t, res); got != p.want {
					t.Errorf("pass %d: headers %q, want %q (events %v)", i, got, p.want, res.Events)
				}
				found := p.event == ""
				for _, e := range res.Events {
					found = found || strings.Contains(e.Message, p.event) || e.Reason == p.event
				}
				if !found {
					t.Errorf("pass %d: no Event %q in %v", i, p.event, res.Events)
				}
			}
		})
	}
}

// TestHeaderData: the source keeps a ConfigMap's data only when it may
// be a header list.
func TestHeaderData(t *testing.T) {
	big := map[string]string{}
	for i := range MaxCustomHeaders + 1 {
		big[fmt.Sprintf("x-%d", i)] = "v"
	}
	for _, tc := range []struct {
		data map[string]string
		keep bool
	}{
		{map[string]string{"X-A": "1", "ca.crt": "PEM"}, true},
		{map[string]string{"ca.crt": "PEM"}, false},
		{map[string]string{"config.yaml": "a: b"}, true}, // a token: checked by Compile
		{map[string]string{"x-a": strings.Repeat("v", MaxCustomHeaderBytes)}, false},
		{big, false},
	} {
		got := HeaderData(tc.data, "ca.crt")
		if (got != nil) != tc.keep || got["ca.crt"] != "" {
			t.Errorf("%v: kept %v", tc.data, got)
		}
	}
}
